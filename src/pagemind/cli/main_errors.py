"""Error handling shared by every command."""

from __future__ import annotations

import functools
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

import click

from ..errors import PagemindError


def _postgres_error(err: BaseException) -> bool:
    """A database error of a Postgres store (psycopg is imported only when such a store was opened)."""
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(err, psycopg.Error)


def handle_errors(fn: Callable) -> Callable:
    """One clear line and a non-zero exit for every expected failure; no tracebacks."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PagemindError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(1)
        except sqlite3.Error as err:  # e.g. a store locked by another process for longer than the timeout
            click.echo(f"error: the store failed: {err} (see --store / PAGEMIND_STORE)", err=True)
            sys.exit(1)
        except Exception as err:
            if not _postgres_error(err):
                raise
            click.echo(f"error: the Postgres store failed: {str(err).strip()} (see --store / PAGEMIND_STORE)",
                       err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("interrupted: finished pages are saved; run the same command again to resume", err=True)
            sys.exit(130)

    return wrapper
