"""The LLM layer: a typed contract, backends, the scripted fake, and the shared client."""
from .base import Backend, Capabilities, Constraint, LLMRequest, LLMResponse, Message, Tool, ToolCall
from .client import LLM
from .fake import ScriptedLLM
from .usage import Trace, TraceEvent, Usage

__all__ = [
           "LLM",
           "Backend",
           "Capabilities",
           "Constraint",
           "LLMRequest",
           "LLMResponse",
           "Message",
           "ScriptedLLM",
           "Tool",
           "ToolCall",
           "Trace",
           "TraceEvent",
           "Usage",
]
