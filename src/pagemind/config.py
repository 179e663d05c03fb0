"""Configuration, resolved explicitly: argument > CLI flag > ``PAGEMIND_*`` env var > user config > default.

The CLI passes its flags in as arguments, so the chain below is all there is. The user config is a
YAML mapping at ``<user dir>/config.yaml`` (keys as in :data:`DEFAULTS`). No globals: every call
builds a :class:`Settings` from what it was given and what the environment says.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
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


SERVER_KINDS = ("vllm", "sglang", "llama.cpp", "llama-cpp-python", "ollama", "openai")  # pagemind.llm.servers
EMBEDDED = ("auto", "server", "process")


def setting(default: Any, help: str, *, flag: str | None = None, choices: tuple[str, ...] | None = None) -> Any:
    """One setting, declared once: its default, its help, the CLI flag that gives it (``flag``: ``--name`` for the
    model and store flags every command takes, ``--no-name`` for a boolean that flag turns off; None: config, env
    and arguments only) and the values it may take."""
    return field(default=default, metadata={"help": help, "flag": flag, "choices": choices})


@dataclass(frozen=True)
class Settings:
    """pagemind's settings; each is given as an argument, a CLI flag (for those declaring one), ``PAGEMIND_<NAME>``,
    or the user config's ``name:``, in that order (:func:`resolve_settings`)."""

    llm: str = setting(f"local:{DEFAULT_MODEL}", "local:NAME | gguf:PATH | openai:MODEL  [env PAGEMIND_LLM; "
                       "default: the embedded local model]", flag="--llm")
    base_url: str | None = setting(None, "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (else "
                                   "OPENAI_BASE_URL, or the OpenAI API)", flag="--base-url")
    api_key: str | None = setting(None, "API key (else OPENAI_API_KEY)", flag="--api-key")
    store: str | None = setting(None, "where memories, agents and the LLM cache live: a SQLite file or a "
                                "postgresql://user@host/db URL [env PAGEMIND_STORE; default <user dir>/pagemind.db]",
                                flag="--store")
    concurrency: int = setting(8, "LLM requests in flight at once [default 8]", flag="--concurrency")
    max_retries: int = setting(4, "retries of a failed LLM request (rate limits, dropped connections)")
    timeout: float = setting(600.0, "seconds per HTTP request to the model server")
    n_ctx: int = setting(16384, "context window for embedded models [default 16384]", flag="--n-ctx")
    context_window: int | None = setting(
        None, "openai:...: the server's context window, when it does not report it (overrides what it reports) "
        "[env PAGEMIND_CONTEXT_WINDOW]", flag="--context-window")
    server_kind: str = setting("auto", "openai:...: which server it is (decides the grammar and tokenize "
                               "mechanisms) [default auto: ask the server]", flag="--server-kind",
                               choices=("auto", *SERVER_KINDS))
    threads: int | None = setting(None, "CPU threads for embedded models [default: the machine's cores]",
                                  flag="--threads")
    prompt_cache_mb: int = setting(
        512, "RAM for llama.cpp KV states of recent prompts beyond the slots' own (0: only the last prompt); the "
        "shared server's memory is its weights + slots x window of KV cache + this cap (`pagemind models status`)")
    embedded: str = setting("auto", "local:/gguf: models: server (one shared llama-server), process (in this "
                            "process), auto", choices=EMBEDDED)
    slots: int = setting(4, "the shared server's slots: requests decoded together, each with a whole n_ctx window")
    server_idle: float = setting(600.0, "seconds without a request before the shared server stops (0: never)")
    max_bytes: int = setting(16 * 1024 * 1024, "refuse text files larger than this (PDF/EPUB/DOCX: up to 16x the "
                             "file, this much text)", flag="--max-bytes")
    ocr: str = setting("auto", "PDF pages without a text layer: auto (read by OCR with Tesseract where installed), "
                       "off (left out), force (every page by OCR)", flag="--ocr", choices=("auto", "off", "force"))
    cache: bool = setting(True, "do not reuse or store LLM replies", flag="--no-cache")
    native_tools: bool = setting(True, "OpenAI-compatible servers: offer native tool calling (else JSON-schema "
                                 "replies)")
    record_runs: bool = setting(True, "record every index, ask and agent turn as a run with its steps "
                                "(pagemind logs)")

    def store_path(self, env: Mapping[str, str] | None = None) -> Path:
        return Path(self.store) if self.store else user_dir(env) / "pagemind.db"


@dataclass(frozen=True)
class SettingSpec:
    """A setting's declaration, read from :class:`Settings`: its name, type, default, help, flag and choices."""

    name: str
    type: type  # int | float | bool | str
    default: Any
    help: str
    flag: str | None = None
    choices: tuple[str, ...] | None = None

    @property
    def param(self) -> str:
        """The CLI parameter's name (``--no-cache`` gives ``no_cache``)."""
        return (self.flag or self.name).lstrip("-").replace("-", "_")

    def coerce(self, value: Any) -> Any:
        """``value`` (from an argument, the environment or the config file) as this setting's type."""
        if value is None:
            return None
        try:
            if self.type is bool:
                return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
            value = self.type(value)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {self.name!r}: {value!r} is not a valid value") from None
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"setting {self.name!r}: {value!r} is not one of {', '.join(self.choices)}")
        return value


@lru_cache(maxsize=1)
def setting_specs() -> tuple[SettingSpec, ...]:
    """Every setting as declared (the CLI's model and store flags are generated from these)."""
    import typing

    hints = typing.get_type_hints(Settings)
    out = []
    for f in fields(Settings):
        kinds = [k for k in typing.get_args(hints[f.name]) or (hints[f.name],) if k is not type(None)]
        out.append(SettingSpec(f.name, kinds[0], f.default, f.metadata["help"], f.metadata["flag"],
                               f.metadata["choices"]))
    return tuple(out)


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
    for spec in setting_specs():
        name = spec.name
        if given.get(name) is not None:
            values[name] = spec.coerce(given[name])
        elif f"PAGEMIND_{name.upper()}" in env:
            values[name] = spec.coerce(env[f"PAGEMIND_{name.upper()}"])
        elif name in config:
            values[name] = spec.coerce(config[name])
    return Settings(**values)
