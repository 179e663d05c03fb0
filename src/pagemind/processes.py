"""Whether a process of this host runs: what leases, the turn lock and the shared model server ask of a holder.

Its own module, below the store and the LLM layer, so both can ask without importing each other.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

HOST = socket.gethostname()


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs (a zombie, exited but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


__all__ = ["HOST", "pid_alive"]
