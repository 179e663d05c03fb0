"""Options declared once: a frozen dataclass of :func:`option` fields, from which every surface is generated.

A class of options subclasses :class:`Options` (a method's :class:`pagemind.methods.options.ReaderOptions`, the
answer's :class:`pagemind.answering.options.AnswerOptions`, the MemGPT agent's); each field is declared with
:func:`option` (default, help, and whether it shapes a stored memory). The field's annotation gives its type (``int``,
``float``, ``bool``, ``str``), ``| None`` makes it optional, and ``Literal[...]`` gives its allowed values. From that
one declaration come: validation of values given in Python (:meth:`Options.create`), the parsing of ``KEY=VALUE``
strings (``pagemind eval -O``), the CLI flags and their help (``cli/options.py``), the JSON schema of the HTTP and MCP
surfaces (:meth:`Options.json_schema`) and ``pagemind methods``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, ClassVar, Literal, TypeVar

from .errors import ConfigError

T = TypeVar("T", bound="Options")
_KEY = "pagemind.option"
_BOOLS = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False, "on": True, "off": False}


@dataclass(frozen=True)
class OptionInfo:
    """What :func:`option` records beside a field's default."""

    help: str
    memory: bool | str = False  # part of the memory's key: changing it builds another memory ("changed": only
    # when it differs from its default, so adding a memory option leaves the keys of stored memories as they were)
    minimum: float | None = None
    flag: str | None = None  # the CLI flag(s) when not ``--name`` / ``--name/--no-name``
    maximum: float | None = None
    above: float | None = None  # exclusive bounds: the value must be greater than ``above``, less than ``below``
    below: float | None = None


def option(default: Any, help: str, *, memory: bool | str = False, minimum: float | None = None,
           flag: str | None = None, maximum: float | None = None, above: float | None = None,
           below: float | None = None) -> Any:
    """Declare an option (a dataclass field of an :class:`Options` subclass). ``memory=True``: part of the
    memory's key; ``memory="changed"``: part of it only when it differs from ``default`` (for an option added
    after memories were stored, whose default builds what they hold). ``minimum``/``maximum`` are inclusive
    bounds, ``above``/``below`` exclusive ones (a share in (0, 1): ``above=0, below=1``)."""
    if memory not in (True, False, "changed"):
        raise TypeError("memory is True, False or 'changed'")
    return field(default=default, metadata={_KEY: OptionInfo(help, memory, minimum, flag, maximum, above, below)})


_FROM = "pagemind.option.from"


def option_of(owner: type[Options], name: str, *, default: Any = MISSING, note: str = "") -> Any:
    """Declare again an option ``owner`` declares, where another class of options passes it on to ``owner`` (the
    evaluated MemGPT's options to the agent's): its help and bounds as ``owner`` declares them, its default unless
    ``default`` is given (with ``note``, the help says why), and :meth:`Options.passed_to` hands its value on."""
    declared = next((f for f in fields(owner) if f.name == name), None)
    if declared is None or _KEY not in declared.metadata:
        raise TypeError(f"{owner.__name__} declares no option {name!r}")
    if declared.default is MISSING and default is MISSING:
        raise TypeError(f"{owner.__name__}.{name} has no plain default: give one")
    info: OptionInfo = replace(declared.metadata[_KEY], flag=None)  # a flag of its own surface, not the owner's
    if note:
        info = replace(info, help=f"{info.help} ({note})")
    return field(default=declared.default if default is MISSING else default, metadata={_KEY: info, _FROM: owner})


@dataclass(frozen=True)
class OptionSpec:
    """One declared option, resolved: its type, allowed values, default and help."""

    name: str
    type: type  # int | float | bool | str
    default: Any
    help: str
    nullable: bool = False
    choices: tuple[str, ...] | None = None
    memory: bool | str = False
    minimum: float | None = None
    flag: str | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None

    def coerce(self, value: Any, owner: str) -> Any:
        """``value`` (a Python value or a string from the command line) as this option's type, or an error."""
        if value is None:
            if self.nullable:
                return None
            raise ConfigError(f"{owner} option {self.name} cannot be empty")
        if isinstance(value, str) and self.type is not str:
            text = value.strip().lower()
            if self.nullable and text in ("none", "null", ""):
                return None
            try:
                value = _BOOLS[text] if self.type is bool else self.type(text)
            except (KeyError, ValueError):
                raise ConfigError(f"{owner} option {self.name} takes {self._kind()} (got {value!r})") from None
        elif self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif not isinstance(value, self.type) or (self.type is not bool and isinstance(value, bool)):
            raise ConfigError(f"{owner} option {self.name} takes {self._kind()} (got {value!r})")
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{owner} option {self.name} must be one of {', '.join(self.choices)} (got {value!r})")
        if self.type is str:  # a text's bound is its length
            if self.maximum is not None and len(value) > self.maximum:
                raise ConfigError(f"{owner} option {self.name} takes at most {self.maximum:g} characters (got "
                                  f"{len(value):,})")
            return value
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{owner} option {self.name} must be at least {self.minimum:g} (got {value!r})")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"{owner} option {self.name} must be at most {self.maximum:g} (got {value!r})")
        if self.above is not None and not value > self.above:
            raise ConfigError(f"{owner} option {self.name} must be more than {self.above:g} (got {value!r})")
        if self.below is not None and not value < self.below:
            raise ConfigError(f"{owner} option {self.name} must be less than {self.below:g} (got {value!r})")
        return value

    @property
    def param(self) -> str:
        """The CLI parameter's name: the flag's (``--no-cache`` gives ``no_cache``), else the option's."""
        return (self.flag or self.name).split("/")[0].lstrip("-").replace("-", "_")

    def check_json(self, value: Any, owner: str) -> Any:
        """``value`` as a JSON document gives it, checked strictly: its JSON type must be the option's (no ``"5"``
        for 5, no ``1`` for true; null only where the option is nullable), then as :meth:`coerce` checks it."""
        if self.type is int and isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON's 204.0 is a whole number (JSON Schema counts it one; Python's checks do not)
        kinds = {int: (int,), float: (int, float), bool: (bool,), str: (str,)}[self.type]
        if value is not None and (not isinstance(value, kinds) or (self.type is not bool and isinstance(value, bool))):
            raise ConfigError(f"{owner} option {self.name} takes {self._kind()} (got {value!r})")
        return self.coerce(value, owner)

    def _kind(self) -> str:
        kind = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}[self.type]
        return kind + (" or none" if self.nullable else "")

    def schema(self) -> dict[str, Any]:
        """The JSON schema of this option."""
        name = {int: "integer", float: "number", bool: "boolean", str: "string"}[self.type]
        out: dict[str, Any] = {"type": [name, "null"] if self.nullable else name, "description": self.help}
        if self.default is not None:
            out["default"] = self.default
        if self.choices is not None:
            out["enum"] = list(self.choices) + ([None] if self.nullable else [])
        if self.minimum is not None:
            out["minimum"] = int(self.minimum) if self.type is int else self.minimum
        if self.maximum is not None and self.type is str:
            out["maxLength"] = int(self.maximum)
        elif self.maximum is not None:
            out["maximum"] = int(self.maximum) if self.type is int else self.maximum
        if self.above is not None:
            out["exclusiveMinimum"] = self.above
        if self.below is not None:
            out["exclusiveMaximum"] = self.below
        return out


def _resolve(annotation: Any) -> tuple[type, bool, tuple[str, ...] | None]:
    """(base type, nullable, choices) of an annotation such as ``int | None`` or ``Literal["a", "b"]``."""
    nullable = False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(annotation))
        if len(args) != 1:
            raise TypeError(f"an option's type must be one type (or that type | None), not {annotation!r}")
        annotation = args[0]
        origin = typing.get_origin(annotation)
    if origin is Literal:
        values = typing.get_args(annotation)
        if not all(isinstance(v, str) for v in values):
            raise TypeError("Literal options take strings")
        return str, nullable, tuple(values)
    if annotation not in (int, float, bool, str):
        raise TypeError(f"an option's type is int, float, bool, str or a Literal of strings, not {annotation!r}")
    return annotation, nullable, None


@dataclass(frozen=True)
class Options:
    """Base of declared options (a method's: :class:`ReaderOptions`; the MemGPT agent's). Subclasses declare
    fields with :func:`option` and may set ``presets`` (name -> values) and override :meth:`check` for rules that
    involve several options."""

    presets: ClassVar[dict[str, dict[str, Any]]] = {}
    owner: ClassVar[str] = "method"  # the name errors use

    @classmethod
    def specs(cls) -> tuple[OptionSpec, ...]:
        """Every declared option, in declaration order."""
        return _specs(cls)

    def passed_to(self, owner: type[Options]) -> dict[str, Any]:
        """The values of the options declared with :func:`option_of` ``owner``, by name: what this class hands on."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get(_FROM) is owner}

    @classmethod
    def spec(cls, name: str) -> OptionSpec:
        for s in cls.specs():
            if s.name == name:
                return s
        known = ", ".join(s.name for s in cls.specs())
        raise ConfigError(f"unknown {cls.owner} option {name!r} (have: {known})")

    @classmethod
    def create(cls: type[T], preset: str | None = None, **given: Any) -> T:
        """The preset's values (the first preset when none is named), then ``given`` (``None`` = the default);
        every value checked against its declaration."""
        names = {s.name for s in cls.specs()}
        if preset is not None and not isinstance(preset, str):  # e.g. {} from JSON: not "no preset"
            raise ConfigError(f"{cls.owner} option preset takes the name of a preset (got {preset!r})")
        unknown = sorted(set(given) - names)
        if unknown:
            raise ConfigError(f"unknown {cls.owner} option(s): {', '.join(unknown)} (have: {', '.join(sorted(names))})")
        values: dict[str, Any] = {}
        if cls.presets:
            preset = preset or next(iter(cls.presets))
            if preset not in cls.presets:
                raise ConfigError(f"unknown {cls.owner} preset {preset!r} (have: {', '.join(cls.presets)})")
            values = {k: v for k, v in cls.presets[preset].items() if k in names}  # presets are shared by a family
            if "preset" in names:
                values["preset"] = preset
        elif preset is not None and "preset" in names:
            values["preset"] = preset
        values.update({k: v for k, v in given.items() if v is not None})
        checked = {k: cls.spec(k).coerce(v, cls.owner) for k, v in values.items()}
        opts = cls(**checked)
        opts.check()
        return opts

    @classmethod
    def shared_names(cls) -> frozenset[str]:
        """The options a family of classes shares (listed after each class's own): none here."""
        return frozenset()

    def check(self) -> None:
        """Rules across options; raise :class:`ConfigError`."""

    def replace(self: T, **changes: Any) -> T:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return {s.name: getattr(self, s.name) for s in self.specs()}

    def with_json(self: T, changes: Mapping[str, Any]) -> T:
        """These options with ``changes`` as a JSON document gives them (an HTTP body, an MCP call): unknown names
        refused, each value checked strictly (:meth:`OptionSpec.check_json`; null, where allowed, keeps the value),
        then the rules across options (:meth:`check`); a :class:`ConfigError` names the option."""
        names = {s.name for s in self.specs()}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ConfigError(f"unknown {self.owner} option(s): {', '.join(unknown)} "
                              f"(have: {', '.join(sorted(names))})")
        checked = {k: self.spec(k).check_json(v, self.owner) for k, v in changes.items()}
        options = replace(self, **{k: v for k, v in checked.items() if v is not None})
        options.check()
        return options

    @classmethod
    def coerce(cls, name: str, text: str) -> Any:
        """A ``KEY=VALUE`` string's value as the declared type."""
        return cls.spec(name).coerce(text, cls.owner)

    @classmethod
    def default_of(cls, name: str, preset: str | None = None) -> Any:
        if preset is not None and name in cls.presets.get(preset, {}):
            return cls.presets[preset][name]
        if name == "preset" and cls.presets:
            return next(iter(cls.presets))
        return cls.spec(name).default

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """A JSON schema (draft 2020-12) of the options, as the HTTP API and the MCP tools take them."""
        properties = {s.name: s.schema() for s in cls.specs()}
        if cls.presets and "preset" in properties:
            properties["preset"]["enum"] = list(cls.presets)
            properties["preset"]["default"] = next(iter(cls.presets))
        return {"type": "object", "properties": properties, "additionalProperties": False}


_SPECS: dict[type, tuple[OptionSpec, ...]] = {}  # by class: read from its fields once


def _specs(cls: type[Options]) -> tuple[OptionSpec, ...]:
    if cls in _SPECS:
        return _SPECS[cls]
    hints = typing.get_type_hints(cls)
    out = []
    shared = cls.shared_names()
    for f in sorted(fields(cls), key=lambda f: f.name in shared):  # the shared options after a class's own
        info = f.metadata.get(_KEY)
        if info is None:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with option()")
        base, nullable, choices = _resolve(hints[f.name])
        default = None if f.default is MISSING else f.default
        out.append(OptionSpec(f.name, base, default, info.help, nullable, choices, info.memory, info.minimum,
                              info.flag, info.maximum, info.above, info.below))
    _SPECS[cls] = tuple(out)
    return _SPECS[cls]


__all__ = ["OptionInfo", "OptionSpec", "Options", "option"]
