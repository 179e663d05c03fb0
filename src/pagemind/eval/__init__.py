"""The evaluation harness: every method on the papers' benchmarks, with their metrics, at matched cost.

    from pagemind import Pagemind
    from pagemind.eval import EvalConfig, Runner, write_report

    with Pagemind("local:qwen2.5-coder-1.5b") as pm:
        Runner(pm, EvalConfig("quality", ("readagent-p", "full"), limit=10), "runs/quality").run()
    write_report("runs/quality")

Layers: ``datasets`` (Example, data root) and the loaders (``sets_*``, ``generated``) know nothing of methods;
``sets`` collects the loaders' sets; ``metrics`` and ``raters`` score one reply, ``evidence`` its citations
against the labelled evidence spans the loaders keep on each example; ``memgpt`` adapts the agent to
examples; ``runner`` drives methods over examples into a run directory (``rundir``); ``report`` and ``plot`` read
only the run directory.
"""

from .datasets import DatasetSpec, Example, Turn, data_root
from .evidence import Span, evidence_scores
from .report import summarise, write_report
from .runner import ALL_METHODS, EvalConfig, Runner, RunResult, expand_methods, select
from .sets import datasets, load_dataset

__all__ = ["ALL_METHODS", "DatasetSpec", "EvalConfig", "Example", "RunResult", "Runner", "Span", "Turn", "data_root",
           "datasets", "evidence_scores", "expand_methods", "load_dataset", "select", "summarise", "write_report"]
