"""Configuration, resolved explicitly: argument > CLI flag > ``PAGEMIND_*`` env var > user config > default.

The CLI passes its flags in as arguments, so the chain below is all there is. The user config is a
YAML mapping at ``<user dir>/config.yaml`` (keys as in :class:`Settings`). No globals: every call
builds a :class:`Settings` from what it was given and what the environment says.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from platformdirs import user_cache_dir, user_data_dir

from . import limits
from .declare import Options, option
from .errors import ConfigError

DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def user_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the store and the config live: ``PAGEMIND_HOME`` or the platform's user data dir."""
    env = os.environ if env is None else env
    return Path(env.get("PAGEMIND_HOME") or user_data_dir("pagemind", appauthor=False))


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where assembled model files live: ``PAGEMIND_CACHE_DIR`` or the platform's user cache dir."""
    env = os.environ if env is None else env
    return Path(env.get("PAGEMIND_CACHE_DIR") or user_cache_dir("pagemind", appauthor=False))


ServerKind = Literal["auto", "vllm", "sglang", "llama.cpp", "llama-cpp-python", "ollama", "openai"]
SERVER_KINDS = typing.get_args(ServerKind)[1:]  # pagemind.llm.servers
Embedded = Literal["auto", "server", "process"]
EMBEDDED = typing.get_args(Embedded)


@dataclass(frozen=True)
class Settings(Options):
    """pagemind's settings, declared as options are (:func:`pagemind.declare.option`): a default, a help, the CLI
    flag that gives it (``--name`` for the model and store flags every command takes, ``--no-name`` for a boolean
    that flag turns off; none: config, env and arguments only) and its type and choices from the annotation. Each is
    given as an argument, a CLI flag, ``PAGEMIND_<NAME>``, or the user config's ``name:``, in that order
    (:func:`resolve_settings`)."""

    owner = "setting"

    llm: str = option(f"local:{DEFAULT_MODEL}", "local:NAME | gguf:PATH | openai:MODEL  [env PAGEMIND_LLM; "
                      "default: the embedded local model]", flag="--llm")
    base_url: str | None = option(None, "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (else "
                                  "OPENAI_BASE_URL, or the OpenAI API)", flag="--base-url")
    api_key: str | None = option(None, "API key (else OPENAI_API_KEY)", flag="--api-key")
    store: str | None = option(None, "where memories, agents and the LLM cache live: a SQLite file or a "
                               "postgresql://user@host/db URL [env PAGEMIND_STORE; default <user dir>/pagemind.db]",
                               flag="--store")
    concurrency: int = option(8, "LLM requests in flight at once [default 8]", flag="--concurrency", minimum=1)
    max_retries: int = option(4, "retries of a failed LLM request (rate limits, dropped connections)", minimum=0)
    timeout: float = option(600.0, "seconds per HTTP request to the model server", above=0)
    n_ctx: int = option(16384, "context window for embedded models [default 16384]", flag="--n-ctx")
    context_window: int | None = option(
        None, "openai:...: the server's context window, when it does not report it (overrides what it reports) "
        "[env PAGEMIND_CONTEXT_WINDOW]", flag="--context-window")
    server_kind: ServerKind = option("auto", "openai:...: which server it is (decides the grammar and tokenize "
                                     "mechanisms) [default auto: ask the server]", flag="--server-kind")
    threads: int | None = option(None, "CPU threads for embedded models [default: the machine's cores]",
                                 flag="--threads")
    prompt_cache_mb: int = option(
        512, "RAM for llama.cpp KV states of recent prompts beyond the slots' own (0: only the last prompt); the "
        "shared server's memory is its weights + slots x window of KV cache + this cap (`pagemind models status`)",
        minimum=0)
    embedded: Embedded = option("auto", "local:/gguf: models: server (one shared llama-server), process (in this "
                                "process), auto")
    slots: int = option(4, "the shared server's slots: requests decoded together, each with a whole n_ctx window",
                        minimum=1)
    server_idle: float = option(600.0, "seconds without a request before the shared server stops (0: never)",
                                minimum=0)
    max_bytes: int = option(16 * 1024 * 1024, "refuse text files larger than this (PDF/EPUB/DOCX: up to 16x the "
                            "file, this much text)", flag="--max-bytes", minimum=1)
    ocr: Literal["auto", "off", "force"] = option(
        "auto", "PDF pages without a text layer: auto (read by OCR with Tesseract where installed), off (left out), "
                "force (every page by OCR)", flag="--ocr")
    ocr_pages: int = option(limits.MAX_OCR_PAGES, "the most pages of one PDF read by OCR (a page takes seconds): "
                            "pages past it are left unread and named", flag="--ocr-pages", minimum=0)
    embed_tokens: int = option(
        limits.EMBED_TOKENS, "the most encoder tokens one embeddings request embeds, its texts together (a larger "
        "request is refused, to be sent in smaller batches): MiniLM embeds ~3,000 tokens a CPU second, so the "
        "default bounds a request to ~5 s of CPU; up to OpenAI's per-request 300000", flag="--embed-tokens",
        minimum=1, maximum=limits.MAX_EMBED_TOTAL)
    cache: bool = option(True, "do not reuse or store LLM replies", flag="--no-cache")
    native_tools: bool = option(True, "OpenAI-compatible servers: offer native tool calling (else JSON-schema "
                                "replies)")
    record_runs: bool = option(True, "record every index, ask and agent turn as a run with its steps "
                               "(pagemind logs)")

    def store_path(self, env: Mapping[str, str] | None = None) -> Path:
        return Path(self.store) if self.store else user_dir(env) / "pagemind.db"


def load_user_config(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    path = user_dir(env) / "config.yaml"
    if not path.exists():
        return {}
    import yaml  # here: most runs have no config file, and yaml costs start-up

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({err})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings")
    return data


def resolve_settings(env: Mapping[str, str] | None = None, **given: Any) -> Settings:
    """Build Settings: ``given`` (arguments and CLI flags; ``None`` = not given) > env > config > default."""
    env = os.environ if env is None else env
    known = {f.name for f in fields(Settings)}
    unknown = set(given) - known
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    config = load_user_config(env)
    bad = set(config) - known
    if bad:
        raise ConfigError(f"{user_dir(env) / 'config.yaml'}: unknown setting(s): {', '.join(sorted(bad))}")
    values: dict[str, Any] = {}
    for spec in Settings.specs():
        name = spec.name
        if given.get(name) is not None:
            value = os.fspath(given[name]) if isinstance(given[name], os.PathLike) else given[name]
            values[name] = spec.coerce(value, Settings.owner)
        elif f"PAGEMIND_{name.upper()}" in env:
            values[name] = spec.coerce(env[f"PAGEMIND_{name.upper()}"], Settings.owner)
        elif name in config:
            values[name] = spec.coerce(config[name], Settings.owner)
    return Settings(**values)
