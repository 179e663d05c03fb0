"""Configuration, resolved explicitly: argument > CLI flag > ``PAGEMIND_*`` env var > user config > default.

The CLI passes its flags in as arguments, so the chain below is all there is. The user config is a
YAML mapping at ``<user dir>/config.yaml`` (keys as in :data:`DEFAULTS`). No globals: every call
builds a :class:`Settings` from what it was given and what the environment says.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir, user_data_dir

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


@dataclass(frozen=True)
class Settings:
    llm: str = f"local:{DEFAULT_MODEL}"  # local:NAME | gguf:PATH | openai:MODEL | fake
    base_url: str | None = None  # for openai:...; else OPENAI_BASE_URL / the OpenAI API
    api_key: str | None = None  # for openai:...; else OPENAI_API_KEY
    store: str | None = None  # SQLite file; default <user dir>/pagemind.db
    concurrency: int = 8
    max_retries: int = 4
    timeout: float = 600.0  # seconds per HTTP request
    n_ctx: int = 16384  # context window for embedded models
    context_window: int | None = None  # openai:...: the server's window when it does not report it (overrides it)
    server_kind: str = "auto"  # openai:...: auto (ask the server) or one of pagemind.llm.servers.SERVER_KINDS
    threads: int | None = None  # llama.cpp threads; default: the machine's cores
    # RAM for llama.cpp KV states of recent prompts beyond the slots' own (0: only the last prompt); the shared
    # server's memory is its weights + slots x window of KV cache + this cap (`pagemind models status` shows it)
    prompt_cache_mb: int = 512
    embedded: str = "auto"  # local:/gguf: models: server (one shared llama-server), process (in this process), auto
    slots: int = 4  # the shared server's slots: requests decoded together, each with a whole n_ctx window
    server_idle: float = 600.0  # seconds without a request before the shared server stops (0: never)
    max_bytes: int = 16 * 1024 * 1024
    cache: bool = True  # LLM response cache
    native_tools: bool = True  # OpenAI-compatible servers: offer native tool calling (else JSON-schema replies)
    record_runs: bool = True  # record every index, ask and agent turn as a run with its steps (pagemind logs)

    def store_path(self, env: Mapping[str, str] | None = None) -> Path:
        return Path(self.store) if self.store else user_dir(env) / "pagemind.db"


_INT = {"concurrency", "max_retries", "n_ctx", "threads", "max_bytes", "prompt_cache_mb", "context_window", "slots"}
_FLOAT = {"timeout", "server_idle"}
EMBEDDED = ("auto", "server", "process")
_BOOL = {"cache", "native_tools", "record_runs"}


def _coerce(name: str, value: Any) -> Any:
    if value is None:
        return None
    try:
        if name in _INT:
            return int(value)
        if name in _FLOAT:
            return float(value)
        if name in _BOOL:
            return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name!r}: {value!r} is not a valid value") from None
    if name == "embedded" and str(value) not in EMBEDDED:
        raise ConfigError(f"setting 'embedded': {value!r} is not one of {', '.join(EMBEDDED)}")
    return str(value)


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
    for name in known:
        if given.get(name) is not None:
            values[name] = _coerce(name, given[name])
        elif f"PAGEMIND_{name.upper()}" in env:
            values[name] = _coerce(name, env[f"PAGEMIND_{name.upper()}"])
        elif name in config:
            values[name] = _coerce(name, config[name])
    return Settings(**values)
