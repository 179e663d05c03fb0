"""The service layer of ``pagemind serve``: every operation the HTTP API and the MCP tools offer, written once,
one module per concern (users, the model and methods, documents, libraries, runs, agents) over the common ground of
:mod:`.base`.

Each operation takes the acting user and checked values (:mod:`..shapes`), and returns typed values
(:mod:`..views`, the store's rows, the domain's values) or a started run (its row and the future of its result):
no JSON is made here. The transports only translate: HTTP routes (:mod:`..app`, :mod:`..agents`) and MCP tools
(:mod:`..mcp`) parse their arguments into the same shapes, call the same operation and render the same value
(:mod:`..shapes`, :mod:`..letta`, :mod:`..openai_compat`), so a check, a limit or a tenancy rule cannot be forgotten
on one of them. Runs execute on one worker pool with one FIFO line per agent (:mod:`..workers`), whichever transport
started them.

Blocking: every operation may touch the store or the model; callers on an event loop run them in a thread.
"""

from __future__ import annotations

from .agents import AgentNameTaken, AgentOps, keyed_run_id
from .documents import DocumentOps
from .libraries import LibraryOps
from .models import ModelOps
from .runs import CONTEXT_CHARS, RunOps
from .users import UserOps


class Service(UserOps, ModelOps, DocumentOps, LibraryOps, RunOps, AgentOps):
    """Every operation of the service, by concern (each a mixin over :class:`~.base.ServiceBase`)."""


__all__ = ["CONTEXT_CHARS", "AgentNameTaken", "Service", "keyed_run_id"]
