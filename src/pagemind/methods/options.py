"""Method settings from a named preset plus overrides: the step every method's options class shares."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, TypeVar

from ..errors import ConfigError

T = TypeVar("T")


def from_preset(cls: type[T], label: str, presets: dict[str, dict[str, Any]], preset: str,
                overrides: dict[str, Any]) -> T:
    """``cls`` with the preset's values (its ``prompts`` entry names a prompt set, not a field), then the
    overrides that are not None. An unknown preset or option is a :class:`ConfigError` naming ``label``."""
    if preset not in presets:
        raise ConfigError(f"unknown {label} preset {preset!r} (have: {', '.join(presets)})")
    bad = set(overrides) - {f.name for f in fields(cls)}  # type: ignore[arg-type]
    if bad:
        raise ConfigError(f"unknown {label} option(s): {', '.join(sorted(bad))}")
    base = {k: v for k, v in presets[preset].items() if k != "prompts"}
    return replace(cls(preset=preset, **base), **{k: v for k, v in overrides.items() if v is not None})  # type: ignore[call-arg]
