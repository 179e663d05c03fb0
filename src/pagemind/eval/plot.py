"""The cost/quality picture of a run: score against tokens per question, one point per method with its
95% interval. Left: answer-time tokens; right: all-in tokens (memory builds of the run spread over the
questions), so methods that pay up front (ReadAgent, MemWalker) are seen both ways."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import ConfigError

INSTALL_HINT = "install the evaluation extra for plots: pip install 'pagemind[eval]'"


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(f"plot.png skipped: matplotlib is missing; {INSTALL_HINT}") from None
    return plt


def _tokens_label(value: float, _pos: int = 0) -> str:
    return f"{value / 1000:g}k" if value >= 1000 else f"{value:g}"


def _minor(value: float, _pos: int = 0) -> str:
    leading = round(value / 10 ** math.floor(math.log10(value))) if value > 0 else 0
    return _tokens_label(value) if leading in (2, 5) else ""


def plot_summary(summary: dict[str, Any], path: Path) -> Path:
    plt = _pyplot()
    c, primary = summary["config"], summary["primary"]
    points = [m for m in summary["methods"] if m["score"] is not None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, key, label in ((axes[0], "tokens", "answer tokens per question"),
                           (axes[1], "all_in_tokens", "all-in tokens per question (index + answer)")):
        for i, m in enumerate(points):
            x = m.get(key) or m.get("tokens") or 0
            y = m["score"]
            err = [[max(0.0, y - (m["ci_low"] if m["ci_low"] is not None else y))],
                   [max(0.0, (m["ci_high"] if m["ci_high"] is not None else y) - y)]]
            ax.errorbar([max(x, 1)], [y], yerr=err, fmt="o", capsize=4, color=f"C{i % 10}", label=m["method"])
            ax.annotate(m["method"], (max(x, 1), y), textcoords="offset points", xytext=(6, 4 + 9 * (i % 4)),
                        fontsize=8, color=f"C{i % 10}")  # staggered: methods often share a score
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(_tokens_label)
        ax.xaxis.set_minor_formatter(_minor)  # a label on 2, 5 x 10^k only: the others overlap
        ax.set_xlabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(f"{primary} (95% CI)")
    axes[0].set_ylim(-0.03, 1.03)  # every headline metric is a 0-1 score
    budget = f", budget {c['budget']} tokens" if c.get("budget") is not None else ""
    fig.suptitle(f"{c['dataset']}: {summary['examples']} examples, {c.get('model')}{budget}", fontsize=10)
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
