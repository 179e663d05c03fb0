"""pagemind: let any LLM read, remember and answer over text far longer than its context window."""

from .answering.question import Answer, Question
from .api import METHODS, Pagemind, Plan, ask
from .config import Settings, resolve_settings
from .errors import (
                     BackendUnavailable,
                     ConfigError,
                     ContextWindowExceeded,
                     InputError,
                     LLMError,
                     ModelNotInstalled,
                     PagemindError,
                     RateLimited,
)
from .llm import LLM, Backend, LLMRequest, LLMResponse, ScriptedLLM, Trace
from .store import Store
from .text import Document, load_document
from .version import VERSION

__version__ = VERSION
__all__ = [
                     "LLM",
                     "METHODS",
                     "Answer",
                     "Backend",
                     "BackendUnavailable",
                     "ConfigError",
                     "ContextWindowExceeded",
                     "Document",
                     "InputError",
                     "LLMError",
                     "LLMRequest",
                     "LLMResponse",
                     "ModelNotInstalled",
                     "Pagemind",
                     "PagemindError",
                     "Plan",
                     "Question",
                     "RateLimited",
                     "ScriptedLLM",
                     "Settings",
                     "Store",
                     "Trace",
                     "ask",
                     "load_document",
                     "resolve_settings",
]
