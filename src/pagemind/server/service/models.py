"""The model and the methods the service offers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from ...answering.question import ReplySettings
from ..views import ModelInfo
from .base import ServiceBase

if TYPE_CHECKING:
    from ...llm.base import Capabilities
    from ...methods.base import Method
    from ...retrieval.embed import Embeddings
    from ...store import (
        UserRow,
    )



class ModelOps(ServiceBase):
    """The model behind the service and the methods it offers; the encoder; a chat UI's own tasks."""

    def capabilities(self) -> Capabilities:
        """What the model behind the service can do (constrained JSON, grammars, tools, its window)."""
        caps: Capabilities = self.pm.llm.backend.capabilities
        return caps

    def models(self) -> ModelInfo:
        backend = self.pm.llm.backend
        return ModelInfo(self.model, type(backend).__name__, backend.capabilities)

    @staticmethod
    def methods() -> list[type[Method]]:
        """Every method the service offers (each declares its options: :meth:`Method.describe_method`)."""
        from ...methods import registry

        return list(registry.all_readers())

    def embed(self, user: UserRow, texts: Sequence[str], wanted: Callable[[], bool] | None = None) -> Embeddings:
        """The embedded encoder's vector of each text (:meth:`Pagemind.embed`; ``wanted`` says whether the client
        still waits); no run, nothing stored."""
        return self.pm.embed(texts, wanted)

    def housekeeping(self, user: UserRow, messages: Sequence[tuple[str, str]],
                     reply: ReplySettings | None = None) -> Any:
        """A chat UI's own task (a title, tags, follow-up questions for its menu) answered by the model directly:
        not a question about a library, not a recorded run; the response."""
        from ...llm.base import LLMRequest, Message
        from ...llm.usage import Trace

        roles: dict[str, Literal["system", "user", "assistant"]] = {"system": "system", "developer": "system",
                                                                     "user": "user", "assistant": "assistant"}
        request = LLMRequest(messages=tuple(Message(roles[role], text) for role, text in messages if role in roles),
                             role="housekeeping",
                             max_tokens=min(256, reply.max_tokens if reply and reply.max_tokens else 256))
        if reply is not None:
            request = replace(reply, json_schema=None, max_tokens=None).applied(request)
        response, _ = self.pm.llm.scoped(self.pm.scope(user.id)).complete(request, Trace())
        return response
