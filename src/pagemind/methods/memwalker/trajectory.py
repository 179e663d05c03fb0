"""The navigation trajectory: one step per decision, and its rendering as a tree walk."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .memory import ROOT, child_id

TRIAGE, LEAF, EXHAUSTED, FAILED, BUDGET = "triage", "leaf", "exhausted", "failed", "budget"


@dataclass(frozen=True)
class NavigationStep:
    """A decision at ``node``: a child number (triage), -1 / -2 (leaf), or the end of a failed search."""

    node: str  # path id: root, 2, 2.1
    kind: str  # triage | leaf | exhausted | failed | budget
    action: int | None = None
    reasoning: str = ""
    answer: str = ""  # leaf -2: the option letter, or the free-form answer
    calls: int = 0  # LLM calls the decision took (0: no call was needed)
    invalid: int = 0  # of which unparsable or invalid

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def format_walk(steps: list[dict[str, Any]]) -> str:
    """``root → 2 → 2.1 (leaf: -1) ← → 2.3 (leaf: -2, answer C)``."""
    parts = [ROOT]
    at: str | None = ROOT  # the node the walk stands on
    for s in steps:
        kind, node = s["kind"], s["node"]
        action: Any = s.get("action")  # stored JSON: the chosen number of a triage or leaf step
        if kind == TRIAGE:
            at = child_id(node, action)
            parts.append(f"→ {at}")
        elif kind == LEAF and action == -1:
            parts[-1] += " (leaf: -1)"
            parts.append("←")
            at = None
        elif kind == LEAF:
            if node != at:  # best-leaf: the walk's first leaf, read again to answer
                parts.append(f"⇒ {node}")
            answer = s.get("answer", "")
            answer = answer if len(answer) <= 40 else answer[:39] + "…"
            parts[-1] += f" (leaf: -2, answer {answer})"
        elif kind == EXHAUSTED:
            parts.append(f"[{node} exhausted] ←" if node != ROOT else f"[{ROOT} exhausted]")
        elif kind == FAILED:
            parts.append(f"✗ no answer ({s.get('invalid', 0)} invalid replies at {node})")
        elif kind == BUDGET:
            parts.append(f"✗ no answer (step budget used up at {node})")
    return " ".join(parts)


def stats(steps: list[NavigationStep], calls: int, invalid: int) -> dict[str, Any]:
    """Paper Table 3 (valid action rate) and Table 4 (stray: a revert happened; recovery: answered after one)."""
    reverts = sum(1 for s in steps if (s.kind == LEAF and s.action == -1) or (s.kind == EXHAUSTED and s.node != ROOT))
    answered = any(s.kind == LEAF and s.action == -2 for s in steps)
    return {
        "navigation_calls": calls,
        "invalid_replies": invalid,
        "valid_action_rate": round((calls - invalid) / calls, 4) if calls else 1.0,
        "reverts": reverts,
        "strayed": reverts > 0,
        "recovered": reverts > 0 and answered,
    }
