"""``python -m pagemind``: the same as the ``pagemind`` command."""

from .cli.main import cli

cli()
