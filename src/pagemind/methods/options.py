"""Every method's options: :class:`ReaderOptions`, declared with :mod:`pagemind.declare` (every surface generated
from the declaration: validation, ``KEY=VALUE`` parsing, CLI flags, the HTTP and MCP schemas, ``pagemind methods``),
extending the answer's options, with presets and the options that key a stored memory
(:meth:`ReaderOptions.memory_settings`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..answering.options import AnswerOptions


@dataclass(frozen=True)
class ReaderOptions(AnswerOptions):
    """Base of every method's options: the answer's (:class:`AnswerOptions`: citations, support, abstention, the
    verifier, reply formats and re-asks, listed after each method's own), presets that may name a prompt set (a
    ``prompts`` entry), and ``memory=`` options that key the stored memory."""

    def memory_settings(self) -> dict[str, Any]:
        """The options that shape the memory (its store key), by name."""
        return {s.name: getattr(self, s.name) for s in self.specs()
                if s.memory is True or (s.memory == "changed" and getattr(self, s.name) != s.default)}

    @property
    def prompt_set(self) -> str:
        """The prompt set the preset names (``quality`` when the method has no presets)."""
        preset = getattr(self, "preset", None)
        return str(self.presets.get(preset, {}).get("prompts", "quality")) if preset else "quality"


__all__ = ["ReaderOptions"]
