"""MemGPT (Packer et al., 2023): a self-editing memory agent on pagemind's LLM layer and store.

Main context = read-only instructions + core-memory blocks + a FIFO queue of events; external context =
recall storage (every event, searchable by text and date) and archival storage (passages, searchable by
text and embeddings). One step = one LLM call = one JSON function call; heartbeats chain steps.
"""

from .actions import Action, InvalidAction, parse_action, step_grammar, step_schema
from .archive import Archive
from .core import Agent
from .documents import LoadedDocument, load_into_agent, load_library_into_agent, passages
from .functions import FUNCTIONS, SPECS, FunctionSpec, Param, ToolError
from .locks import AgentBusy, TurnLock
from .memory import AgentOptions, AgentState, Block, Event, Passage, SearchPage
from .store import AgentExists, AgentNotFound, AgentRecord, AgentStore
from .turn import Step, Turn, TurnResult

__all__ = [
           "FUNCTIONS",
           "SPECS",
           "Action",
           "Agent",
           "AgentBusy",
           "AgentExists",
           "AgentNotFound",
           "AgentOptions",
           "AgentRecord",
           "AgentState",
           "AgentStore",
           "Archive",
           "Block",
           "Event",
           "FunctionSpec",
           "InvalidAction",
           "LoadedDocument",
           "Param",
           "Passage",
           "SearchPage",
           "Step",
           "ToolError",
           "Turn",
           "TurnLock",
           "TurnResult",
           "load_into_agent",
           "load_library_into_agent",
           "parse_action",
           "passages",
           "step_grammar",
           "step_schema",
]
