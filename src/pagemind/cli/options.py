"""Options shared by the commands: the LLM/store flags, the method flags and the session they open."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..api import Pagemind
from ..config import Settings, resolve_settings
from ..errors import ConfigError
from ..methods import registry


def llm_options(fn: Callable) -> Callable:
    """The model and store flags, generated from the settings that declare one (:class:`pagemind.config.Settings`),
    and ``--encoding``."""
    fn = click.option("--encoding", default="utf-8", show_default=True, help="text encoding of FILE")(fn)
    return setting_flags(*(spec.name for spec in Settings.specs() if spec.flag is not None))(fn)


def setting_flags(*names: str, flags: dict[str, str] | None = None,
                  helps: dict[str, str] | None = None) -> Callable[[Callable], Callable]:
    """The flags of the settings ``names``, generated from their declarations (a setting without a declared flag
    gets ``--name``; ``flags`` and ``helps`` rename a flag or say its help for one command). Each reaches the command
    as its setting's name (a boolean's turn-off flag as its ``param``: pass the keywords to
    :func:`settings_given`)."""
    specs = {spec.name: spec for spec in Settings.specs()}

    def add(fn: Callable) -> Callable:
        for name in reversed(names):
            spec = specs[name]
            flag = (flags or {}).get(name) or spec.flag or "--" + name.replace("_", "-")
            text = (helps or {}).get(name, spec.help)
            param = spec.param  # the setting's name where it declares no flag
            if spec.type is bool:  # a flag that turns the setting off (--no-cache)
                fn = click.option(flag, param, is_flag=True, default=None, help=text)(fn)
            else:
                kind = click.Choice(spec.choices) if spec.choices else {int: int, float: float}.get(spec.type, str)
                fn = click.option(flag, param, type=kind, help=text)(fn)
        return fn

    return add


LLM_PARAMS = tuple(spec.param for spec in Settings.specs() if spec.flag) + ("encoding",)


def settings_given(kw: dict[str, Any]) -> dict[str, Any]:
    """The settings a command's flags give (popped from ``kw``; None: not given), for :func:`resolve_settings`."""
    given: dict[str, Any] = {}
    for spec in Settings.specs():
        if spec.param in kw:
            value = kw.pop(spec.param)
            given[spec.name] = (False if value else None) if spec.type is bool and spec.flag else value
    return given


class SectionedCommand(click.Command):
    """A command whose ``--help`` lists its options in sections (an option's ``section`` attribute; the model
    and store flags under "Model and store"; the rest under "Options")."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            default = "Model and store" if param.name in LLM_PARAMS else "Options"
            sections.setdefault(getattr(param, "section", default), []).append(record)
        order = ["Options", "Method"] + [k for k in sections if k not in ("Options", "Method", "Model and store")]
        for name in order + ["Model and store"]:
            if sections.get(name):
                with formatter.section(name):
                    formatter.write_dl(sections[name])


class SectionedOption(click.Option):
    """An option that names its help section."""

    def __init__(self, *args: Any, section: str = "Options", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.section = section


def _readers(include: Callable[[Any], bool]) -> list[Any]:
    return [cls for cls in registry.all_readers() if include(cls)]


def _flag(spec: Any) -> list[str]:
    if spec.flag:
        return [spec.flag]
    dashed = spec.name.replace("_", "-")
    return [f"--{dashed}/--no-{dashed}"] if spec.type is bool else [f"--{dashed}"]


def _help(name: str, readers: list[Any]) -> str:
    """The option's help from its declarations: one text per distinct meaning, with the defaults of each."""
    texts: dict[str, list[str]] = {}
    defaults: dict[str, list[str]] = {}
    for cls in readers:
        spec = cls.Options.spec(name)
        texts.setdefault(spec.help, []).append(cls.name)
        values = {cls.Options.default_of(name, p) for p in cls.Options.presets} or {cls.Options.default_of(name)}
        base = cls.Options.default_of(name)
        shown = "none" if base is None else str(base).lower() if isinstance(base, bool) else str(base)
        others = [f"{p}: {cls.Options.presets[p][name]}" for p in cls.Options.presets
                  if name in cls.Options.presets[p] and cls.Options.presets[p][name] != base and name != "preset"]
        if len(values) > 1 and others:
            shown += " (" + ", ".join(others) + ")"
        defaults.setdefault(shown, []).append(cls.name)
    if len(texts) == 1:
        text = next(iter(texts))
    else:
        text = "; ".join(f"{', '.join(names)}: {t}" for t, names in texts.items())
    if len(defaults) == 1:
        return f"{text} [default {next(iter(defaults))}]"
    return f"{text} [default " + "; ".join(f"{', '.join(n)}: {d}" for d, n in defaults.items()) + "]"


def method_flags(readers: list[Any], method_choice: bool = True, default: str = "auto") -> list[Callable]:
    """The CLI flags of ``readers``' options, generated from their declarations: one flag per option name,
    ``--x/--no-x`` for a boolean, choices from ``Literal`` types; unset flags mean "the method's default"."""
    params: list[Callable] = []
    if method_choice:
        names = [cls.name for cls in readers]
        params.append(click.option("--method", "-m", type=click.Choice(names), default=default, show_default=True,
                                   help="the method (see `pagemind methods`)", cls=SectionedOption, section="Method"))
    declared: dict[str, list[Any]] = {}
    for cls in readers:
        for spec in cls.Options.specs():
            declared.setdefault(spec.name, []).append(cls)
    everyone = frozenset(cls.name for cls in readers)
    for name, owners in declared.items():
        specs = [cls.Options.spec(name) for cls in owners]
        first = specs[0]
        kinds = {s.type for s in specs}
        if len(kinds) > 1:
            raise TypeError(f"option {name} has different types in {', '.join(c.name for c in owners)}")
        if first.choices is not None:
            choices = list(dict.fromkeys(c for s in specs for c in (s.choices or ())))
            if name == "preset":
                choices = list(dict.fromkeys(p for cls in owners for p in cls.Options.presets))
            kind: Any = click.Choice(choices)
        elif name == "preset":
            kind = click.Choice(list(dict.fromkeys(p for cls in owners for p in cls.Options.presets)))
        else:
            kind = {int: int, float: float, bool: bool, str: str}[first.type]
        decls = _flag(first)
        extra: dict[str, Any] = {"default": None}
        if first.type is bool:
            extra["is_flag"] = True
        else:
            extra["type"] = kind
        owner_names = frozenset(cls.name for cls in owners)
        section = "Method" if owner_names == everyone else "Options of " + ", ".join(cls.name for cls in owners)
        params.append(click.option(*decls, help=_help(name, owners), cls=SectionedOption, section=section, **extra))
    return params


def method_options(fn: Callable | None = None, *, directory: bool = True) -> Callable:
    """The ``--method`` flag and every method's option flags (the document methods', plus the directory
    reader's with ``directory``)."""
    def apply(f: Callable) -> Callable:
        readers = _readers(lambda cls: cls.source == "document" or directory)
        for decorator in reversed(method_flags(readers)):
            f = decorator(f)
        return f

    return apply(fn) if fn is not None else apply


def reader_options(name: str) -> Callable:
    """One method's option flags without ``--method`` (``pagemind complete``: the code reader's)."""
    def apply(f: Callable) -> Callable:
        for decorator in reversed(method_flags([registry.get(name)], method_choice=False)):
            f = decorator(f)
        return f

    return apply


def split_method_options(kw: dict[str, Any], method: str | None = None) -> tuple[str, dict[str, Any]]:
    """Pop the method flags from ``kw``: (method, its options). A flag of another method is a usage error."""
    given = kw.pop("method", None)
    method = method or given or "auto"
    cls = registry.get(method)
    known = {s.name for s in cls.Options.specs()}
    flags = {spec.name for reader in registry.all_readers() for spec in reader.Options.specs()}
    opts: dict[str, Any] = {}
    for name in flags:
        if name not in kw:
            continue
        value = kw.pop(name)
        if value is None:
            continue
        if name not in known:
            owners = [r.name for r in registry.all_readers() if name in {s.name for s in r.Options.specs()}]
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(f"{flag} applies to {', '.join(owners)}, not {method}")
        try:
            opts[name] = cls.Options.spec(name).coerce(value, cls.name)
        except ConfigError as err:
            raise click.UsageError(str(err)) from None
    return method, opts


def session(ctx: click.Context, kw: dict[str, Any]) -> Pagemind:
    settings = resolve_settings(**settings_given(kw))
    backend = (ctx.obj or {}).get("backend")  # tests inject a scripted backend here
    return Pagemind(backend, settings=settings)
