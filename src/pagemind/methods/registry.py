"""Which methods exist: pagemind's own readers and those other packages register.

A package adds a method with one entry point in the ``pagemind.readers`` group naming its :class:`Reader`
subclass (``[project.entry-points."pagemind.readers"]`` then ``mymethod = "my_package.module:MyReader"``). The
built-in readers are listed the same way, as ``module:Class`` strings, so a reader's module (and what it imports)
loads only when the reader, its options or the method list is needed.

A name may also be a choice (a :class:`~.base.Chooser`, e.g. ``auto``): it lists and takes options as a reader
does, and :meth:`pagemind.Pagemind.plan` resolves it per document to the reader it picks.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from .base import Method

GROUP = "pagemind.readers"
BUILTIN: dict[str, str] = {
    "auto": "pagemind.methods.auto:Auto",
    "readagent-p": "pagemind.methods.readagent:ReadAgentP",
    "readagent-s": "pagemind.methods.readagent:ReadAgentS",
    "gistmem": "pagemind.methods.readagent:GistMem",
    "memwalker": "pagemind.methods.memwalker:MemWalker",
    "rag": "pagemind.methods.rag:RAG",
    "op-rag": "pagemind.methods.rag:OPRAG",
    "full": "pagemind.methods.full:FullText",
    "code": "pagemind.methods.code:CodeReader",
}
_loaded: dict[str, type[Method]] = {}
_plugins: dict[str, str] | None = None


def _load(target: str) -> type[Method]:
    module, _, attr = target.partition(":")
    return getattr(import_module(module), attr)


def plugin_targets() -> dict[str, str]:
    """Methods registered by other packages: name -> ``module:Class`` (read once; see :func:`refresh`)."""
    global _plugins
    if _plugins is None:
        from importlib.metadata import entry_points  # ~10 ms to import: only when the method list is needed

        _plugins = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    return _plugins


def refresh() -> None:
    """Read the entry points again (after installing a package in a running process)."""
    global _plugins
    _plugins = None
    _loaded.clear()


def names() -> tuple[str, ...]:
    """Every method name: the built-ins in their order, then the plugins'."""
    return tuple(BUILTIN) + tuple(n for n in plugin_targets() if n not in BUILTIN)


def document_methods() -> tuple[str, ...]:
    """The methods that read a document (not a directory)."""
    return tuple(n for n in names() if get(n).source == "document")


def get(name: str) -> type[Method]:
    """The class of method ``name``: a :class:`Reader`, or a :class:`Chooser` (resolved per document)."""
    if name not in _loaded:
        target = BUILTIN.get(name) or plugin_targets().get(name)
        if target is None:
            raise ConfigError(f"unknown method {name!r} (have: {', '.join(names())})")
        try:
            cls = _load(target)
        except (ImportError, AttributeError) as err:
            raise ConfigError(f"method {name!r} ({target}) cannot be loaded: {err}") from err
        from .base import Method

        if not (isinstance(cls, type) and issubclass(cls, Method)):
            raise ConfigError(f"method {name!r} ({target}) is not a pagemind Reader")
        if cls.name != name:
            raise ConfigError(f"method {name!r} ({target}) calls itself {cls.name!r}")
        _loaded[name] = cls
    return _loaded[name]


def all_readers() -> list[type[Method]]:
    return [get(n) for n in names()]


def options_schema() -> dict[str, Any]:
    """One JSON schema object with every document method's options, generated from their declarations (the MCP
    ``ask`` tool's and the HTTP API's ``method_options``). Not a union per method: several clients refuse or
    flatten ``oneOf``, and methods share option names; each property's description names the methods it applies
    to where not all, and a method checks its own options when its reader is made."""
    by_name: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for method in document_methods():
        for name, prop in get(method).Options.json_schema()["properties"].items():
            by_name.setdefault(name, []).append((method, prop))
    properties = {name: merged(variants, len(document_methods())) for name, variants in by_name.items()}
    return {"type": "object", "properties": properties, "additionalProperties": False,
            "description": "each option applies to the methods its description names (every method when none is "
                           "named); leave out what should keep the method's default"}


def merged(variants: list[tuple[str, dict[str, Any]]], methods: int) -> dict[str, Any]:
    """One property for an option several methods declare: the common type; allowed values and minimums that
    admit every method's; the help and default said per method where they differ."""
    first = variants[0][1]
    kinds = {str(p["type"]) for _, p in variants}
    if len(kinds) > 1:
        out: dict[str, Any] = {"anyOf": list({str(p["type"]): {"type": p["type"]} for _, p in variants}.values())}
    else:
        out = {"type": first["type"]}
        if all("enum" in p for _, p in variants):
            out["enum"] = list(dict.fromkeys(v for _, p in variants for v in p["enum"]))
        if all("minimum" in p for _, p in variants):
            out["minimum"] = min(p["minimum"] for _, p in variants)
    defaults = {repr(p.get("default")) for _, p in variants}
    common = len(defaults) == 1 and "default" in first
    if common:
        out["default"] = first["default"]
    helps: dict[str, list[str]] = {}
    for method, p in variants:
        default = f" [default {p['default']!r}]" if "default" in p and not common else ""
        helps.setdefault(p.get("description", "") + default, []).append(method)
    if len(helps) == 1:
        text = next(iter(helps))
        out["description"] = text if len(variants) == methods else f"{', '.join(m for m, _ in variants)}: {text}"
    else:
        out["description"] = "; ".join(f"{', '.join(names)}: {text}" for text, names in helps.items())
    return out


__all__ = ["BUILTIN", "GROUP", "all_readers", "document_methods", "get", "names", "options_schema", "plugin_targets",
           "refresh"]
