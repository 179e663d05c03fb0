"""Typed errors: callers branch on the type, never on the message text."""

from __future__ import annotations


class PagemindError(Exception):
    """Base of every error pagemind raises on purpose."""


# --- input -----------------------------------------------------------------------------------------
class InputError(PagemindError):
    """A document that cannot be read as text (empty, binary, not UTF-8, too large, a directory...)."""


class InputTooLarge(InputError):
    """A document over the size limit (``max_bytes``); the service answers 413."""


class MessageTooLarge(InputTooLarge):
    """A user message that cannot fit the agent's context window beside its system prompt and core memory (the
    service answers 413); nothing is stored."""


class UnsupportedInput(InputError):
    """Bytes that are not a document pagemind reads (binary, an unknown container); the service answers 415."""


class Abandoned(PagemindError):
    """Work stopped because the one client waiting for it left (its timeout, a closed connection): no one reads
    the result, so the server does not finish it."""


class NotFound(PagemindError):
    """No such document, memory, run or agent for this user (also when it is another user's: the service
    answers 404 either way, so ids leak nothing)."""


class DatasetError(InputError):
    """Benchmark data that cannot be used: a missing path, an unknown dataset or format, a malformed row."""


# --- configuration ---------------------------------------------------------------------------------
class ConfigError(PagemindError):
    """A setting that cannot be resolved or is contradictory."""


class ModelNotInstalled(ConfigError):
    """A catalogue model whose weight packages are missing or fail their checksum."""


# --- LLM -------------------------------------------------------------------------------------------
class LLMError(PagemindError):
    """Anything that went wrong while asking a model."""

    retryable: bool = False


class BackendUnavailable(LLMError):
    """The endpoint cannot be reached (connection refused, DNS, timeout) or the local runtime is missing."""

    retryable = True


class RateLimited(LLMError):
    """The endpoint said 429 (or an equivalent) and retries ran out."""

    retryable = True

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ServerError(LLMError):
    """The endpoint answered 5xx."""

    retryable = True


class StreamBroken(LLMError):
    """A streamed reply that broke off: the server sent an error event mid-stream, or the stream ended without its
    terminator (``data: [DONE]``) and without a finish reason. The partial reply is never returned nor cached."""

    retryable = True


class BadRequest(LLMError):
    """The endpoint rejected the request (4xx other than 429 and context-length errors)."""


class ToolsRefused(BadRequest):
    """The endpoint rejected a request because of its native tool calls (a 4xx naming tools, e.g. a model without
    tool support): the same request without tools may be answered. The agent then steps with JSON replies."""


class ContextWindowExceeded(LLMError):
    """A prompt (plus the room kept for the reply) does not fit the model's context window."""

    def __init__(self, message: str, prompt_tokens: int | None = None, context_window: int | None = None):
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context_window = context_window


class ScriptExhausted(LLMError):
    """The scripted fake LLM was asked more often than its script allows (tests only)."""


def is_retryable(error: BaseException) -> bool:
    """True for errors worth another try after a pause."""
    return isinstance(error, LLMError) and error.retryable
