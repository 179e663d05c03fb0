"""Prompts are data: YAML files shipped as package data, rendered strictly.

Each file holds named prompts; each prompt has a ``role`` (what the call is for, used in traces and
by the scripted fake), a ``source`` (the paper, notebook cell or other origin, or "pagemind" for our
own), a ``verbatim`` flag (true when the text is the published prompt word for word, with only its
placeholders renamed) and a Jinja ``template``. Rendering uses ``StrictUndefined``: a missing
variable is an error, never an empty string. Unused variables are an error too, so a prompt cannot
silently drop part of the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2
import jinja2.meta
import yaml

from ..errors import ConfigError

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)


@dataclass(frozen=True)
class Prompt:
    name: str
    role: str
    template: str
    source: str
    verbatim: bool

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(jinja2.meta.find_undeclared_variables(_ENV.parse(self.template)))

    def render(self, **values: Any) -> str:
        missing = self.variables - set(values)
        extra = set(values) - self.variables
        if missing or extra:
            raise ConfigError(
                f"prompt {self.name!r}: missing {sorted(missing)}, unexpected {sorted(extra)}"
            )
        return _ENV.from_string(self.template).render(**values)


@lru_cache(maxsize=None)
def load_prompts(group: str) -> dict[str, Prompt]:
    """All prompts of ``prompts/<group>.yaml``, by name."""
    try:
        text = resources.files(__package__).joinpath(f"{group}.yaml").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no prompt file {group}.yaml") from None
    data = yaml.safe_load(text)
    out = {}
    for name, entry in data["prompts"].items():
        out[name] = Prompt(
            name=name, role=entry["role"], template=entry["template"], source=entry["source"],
            verbatim=bool(entry.get("verbatim", False)),
        )
    return out


def get_prompt(group: str, name: str) -> Prompt:
    prompts = load_prompts(group)
    if name not in prompts:
        raise ConfigError(f"no prompt {name!r} in {group}.yaml (have: {', '.join(sorted(prompts))})")
    return prompts[name]
