"""The dataset registry: every loader module's ``SPECS`` by name, and loading a set's examples. Apart from
:mod:`.datasets` (values, data root, file readers), which the loader modules import: so no module imports back."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from .datasets import DatasetSpec, Example, parse_params, resolve_path


def datasets() -> dict[str, DatasetSpec]:
    """Every dataset by name."""
    from . import generated, sets_dialogue, sets_documents, sets_filings, sets_kv, sets_long

    return {s.name: s for module in (sets_documents, sets_long, sets_filings, sets_dialogue, sets_kv, generated)
            for s in module.SPECS}


def load_dataset(name: str, data: str | Path | None = None, params: Mapping[str, Any] | None = None) -> list[Example]:
    """All examples of dataset ``name`` (every error a :class:`DatasetError` naming the file)."""
    specs = datasets()
    if name not in specs:
        raise DatasetError(f"unknown dataset {name!r} (have: {', '.join(specs)})")
    spec = specs[name]
    path = resolve_path(spec, data) if spec.needs_data or data is not None else None
    examples = spec.loader(path, **parse_params(spec, {k: v for k, v in (params or {}).items()}))
    if not examples:
        raise DatasetError(f"{name}: {path} holds no examples")
    ids = [e.id for e in examples]
    if len(set(ids)) != len(ids):
        raise DatasetError(f"{name}: {path} has duplicate example ids")
    return examples
