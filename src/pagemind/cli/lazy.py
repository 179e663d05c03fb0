"""Commands whose modules load when they are run, so that ``pagemind --help`` and ``pagemind ask`` do not import
every command's dependencies (the agent, the evaluation harness, the service...) on every start.

A command module is registered by name and import path instead of by import::

    serve = lazy("serve", ".serve:serve")   # pagemind.cli.serve, attribute serve: nothing imported yet
    cli.add_command(serve)

The group lists a lazy command with its ``short_help`` (set from ``SHORT_HELP`` in ``cli/main.py``) without
importing it, and replaces it by the real command the first time it is looked up to run, complete or show its own
``--help``. Commands added with ``cli.add_command`` of an imported command work as always (loaded at start-up).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

import click


class LazyCommand(click.Command):
    """A stand-in for the command ``name`` defined at ``target`` (``module:attribute``, the module relative to
    :mod:`pagemind.cli` when it starts with a dot)."""

    def __init__(self, name: str, target: str, short_help: str | None = None) -> None:
        super().__init__(name, short_help=short_help)
        self.target = target

    def load(self) -> click.Command:
        module, _, attr = self.target.partition(":")
        command = getattr(import_module(module, __package__), attr)
        if not isinstance(command, click.Command) or command.name != self.name:
            raise TypeError(f"{self.target} is not the click command {self.name!r}")
        if self.short_help:
            command.short_help = self.short_help
        return command


def lazy(name: str, target: str, short_help: str | None = None) -> LazyCommand:
    """The command ``name`` at ``target``, imported when first needed (see the module's docstring)."""
    return LazyCommand(name, target, short_help)


class LazyGroup(click.Group):
    """A group that loads its :class:`LazyCommand` members when one is used, not when the commands are listed.
    ``prepare`` (if set) is applied to each command as it is loaded."""

    prepare: Callable[[click.Command], None] | None = None
    _listing = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if isinstance(command, LazyCommand) and not self._listing:
            command = command.load()
            self.commands[cmd_name] = command
            if self.prepare is not None:
                self.prepare(command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True  # the listing shows each stand-in's short help: nothing is imported
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False

    def load_all(self) -> None:
        """Load every lazy command (for tools that walk the whole command tree)."""
        for name in list(self.commands):
            self.get_command(click.Context(self), name)
