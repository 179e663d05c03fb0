"""Prompts are data: YAML files shipped as package data, rendered strictly.

Each file holds named prompts. Every prompt has a ``role`` (what the call is for, used in traces and by the
scripted fake), a ``source`` (the paper, notebook cell or code it comes from; a source starting with
``pagemind:`` marks our own text) and a Jinja ``template``. ``verbatim: true`` means the template is the
published text character for character, whitespace included, with only its placeholders renamed
(``placeholders`` maps each published name to our variable) and, where we made a variable of a number the
authors varied or added an optional part, with that variable set to what the published text has in its place
(``published_values``, e.g. ``max_pages: 5``, ``preceding: ""``; see :meth:`Prompt.published_form`).
A prompt that is not verbatim but comes from a published one says how it differs in ``differences``;
``notes`` says how our code fills a verbatim prompt's variables where that differs from the original code.

Rendering uses ``StrictUndefined``: a missing variable is an error, never an empty string. Unused values are
an error too, so a prompt cannot silently drop part of the input, except those the prompt declares in
``ignores`` (a published text with no slot for a value our callers always pass, e.g. QMSum's look-up prompt
shows no answer options).

Start-up: jinja2 and yaml are imported when the first prompt is loaded, a file is parsed once per process
(with libyaml's parser where PyYAML has it), a prompt is checked when first used (:func:`load_prompts` checks a
whole file), and each template is parsed and compiled once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from ..errors import ConfigError

_KEYS = {"role", "source", "template", "verbatim", "differences", "notes", "placeholders", "published_values",
         "ignores"}


@dataclass(frozen=True)
class Prompt:
    name: str
    role: str
    template: str
    source: str
    verbatim: bool
    differences: str = ""  # how the text differs from the published one it comes from
    notes: str = ""  # how our code fills the variables, where the original code filled them differently
    placeholders: Mapping[str, str] = field(default_factory=dict, hash=False)  # published name -> our variable
    published_values: Mapping[str, str] = field(default_factory=dict, hash=False)  # variable -> published text
    ignores: frozenset[str] = frozenset()  # values callers pass that this text has no slot for

    @property
    def variables(self) -> frozenset[str]:
        return _variables(self.template)

    @property
    def own(self) -> bool:
        """The text is pagemind's, not taken or adapted from a published prompt."""
        return self.source.startswith("pagemind:")

    def render(self, **values: Any) -> str:
        missing = self.variables - set(values)
        extra = set(values) - self.variables - self.ignores
        if missing or extra:
            raise ConfigError(
                f"prompt {self.name!r}: missing {sorted(missing)}, unexpected {sorted(extra)}"
            )
        return _compiled(self.template).render(**{k: v for k, v in values.items() if k in self.variables})

    def published_form(self) -> str:
        """The template with each of ``published_values`` written in as the literal the published text has."""
        text = self.template
        for name, literal in self.published_values.items():
            text = re.sub(r"\{\{\s*" + re.escape(name) + r"\s*\}\}", _constant(literal), text)
        return text


def _constant(value: str) -> Callable[[re.Match[str]], str]:
    """A ``re.sub`` replacement giving ``value`` as it is (no backslash escapes)."""
    return lambda _: value


@lru_cache(maxsize=1)
def _env() -> Any:
    import jinja2

    return jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)


@cache
def _variables(template: str) -> frozenset[str]:
    import jinja2.meta

    return frozenset(jinja2.meta.find_undeclared_variables(_env().parse(template)))


@cache
def _compiled(template: str) -> Any:
    return _env().from_string(template)


def parse_yaml(text: str) -> Any:
    """``yaml.safe_load(text)``, through libyaml's parser when PyYAML was built with it (the same values, many
    times faster than the pure-Python parser on the prompt files)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _prompt(group: str, name: str, entry: dict[str, Any]) -> Prompt:
    unknown = set(entry) - _KEYS
    if unknown:
        raise ConfigError(f"{group}.yaml: prompt {name!r} has unknown fields {sorted(unknown)}")
    prompt = Prompt(
        name=name, role=entry["role"], template=entry["template"], source=entry["source"],
        verbatim=bool(entry.get("verbatim", False)), differences=entry.get("differences", ""),
        notes=entry.get("notes", ""), placeholders=dict(entry.get("placeholders") or {}),
        published_values={k: str(v) for k, v in (entry.get("published_values") or {}).items()},
        ignores=frozenset(entry.get("ignores") or ()),
    )
    variables = prompt.variables
    wrong = (prompt.ignores & variables) | ((set(prompt.published_values) | set(prompt.placeholders.values()))
                                            - variables)
    if wrong:
        raise ConfigError(f"{group}.yaml: prompt {name!r}: ignores, published_values or placeholders name "
                          f"{sorted(wrong)} wrongly for its template (variables: {sorted(variables)})")
    return prompt


@cache
def _entries(group: str) -> dict[str, dict[str, Any]]:
    """The parsed entries of ``prompts/<group>.yaml``, by name."""
    try:
        text = resources.files(__package__).joinpath(f"{group}.yaml").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no prompt file {group}.yaml") from None
    return parse_yaml(text)["prompts"]


@cache
def _checked(group: str, name: str) -> Prompt:
    return _prompt(group, name, _entries(group)[name])


@cache
def load_prompts(group: str) -> dict[str, Prompt]:
    """All prompts of ``prompts/<group>.yaml``, by name, each checked."""
    return {name: _checked(group, name) for name in _entries(group)}


def prompt_groups() -> list[str]:
    """The names of every prompt file shipped with pagemind."""
    return sorted(p.name[:-5] for p in resources.files(__package__).iterdir() if p.name.endswith(".yaml"))


def get_prompt(group: str, name: str) -> Prompt:
    """One prompt, checked when first asked for (checking a whole file's templates costs start-up)."""
    entries = _entries(group)
    if name not in entries:
        raise ConfigError(f"no prompt {name!r} in {group}.yaml (have: {', '.join(sorted(entries))})")
    return _checked(group, name)
