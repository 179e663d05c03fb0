"""Turn an ``--llm`` spec into a backend. Each backend owns its quirks; this only dispatches on the prefix.

Specs: ``local:NAME`` (a catalogue model, see ``pagemind models list``), ``gguf:PATH`` (any GGUF file),
``openai:MODEL`` (any OpenAI-compatible server: ``--base-url``/``OPENAI_BASE_URL``, key from
``--api-key``/``OPENAI_API_KEY``; its kind and window are asked from the server, ``--server-kind`` and
``--context-window`` override). The scripted fake is never reachable from here: pass it as an object.
"""

from __future__ import annotations

from ..config import Settings
from ..errors import ConfigError
from .base import Backend

PREFIXES = ("local", "gguf", "openai")


def open_backend(settings: Settings) -> Backend:
    spec = settings.llm
    prefix, _, rest = spec.partition(":")
    if not rest or prefix not in PREFIXES:
        raise ConfigError(f"--llm {spec!r}: expected one of local:NAME, gguf:PATH, openai:MODEL")
    if prefix == "openai":
        from .openai import OpenAICompatible

        return OpenAICompatible(rest, base_url=settings.base_url, api_key=settings.api_key, timeout=settings.timeout,
                                context_window=settings.context_window, server_kind=settings.server_kind,
                                tools=settings.native_tools)
    from .managed import open_embedded

    return open_embedded(spec, settings)
