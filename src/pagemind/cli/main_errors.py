"""Error handling shared by every command."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import click

from ..errors import PagemindError


def handle_errors(fn: Callable) -> Callable:
    """One clear line and a non-zero exit for every expected failure; no tracebacks."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PagemindError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("interrupted: finished pages are saved; run the same command again to resume", err=True)
            sys.exit(130)

    return wrapper
