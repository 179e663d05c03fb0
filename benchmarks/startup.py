"""(f) Start-up: how long a pagemind command takes when it has (almost) nothing to do, in fresh processes.

Each command runs ``--runs`` times (default 15) in a new interpreter, the commands taking turns so that a busy
machine slows them alike; reported per command: the median wall time and the median CPU time (user + system of
the child process, less sensitive to other load on the machine than wall time), and the fastest wall time.

* ``python -c pass``: the interpreter's own floor (with this machine's ``site`` packages);
* ``python -c "import pagemind"``;
* ``pagemind --help`` and ``pagemind methods`` (``python -m pagemind ...``);
* ``pagemind ask --sample`` (cached): the bundled short story, method auto (it reads the text whole: one LLM
  call), the answer served from the response cache;
* ``pagemind ask --long-sample -m readagent-p`` (cached): the 16,895-word novella's gist memory built once
  before timing; the look-up and the answer served from the cache.

The asks go through the OpenAI-compatible backend to ``pagemind.llm.mockserver.MockServer`` on 127.0.0.1 (in
this process; replies read from the prompt, as in ``scale.py``), so the server's discovery requests are part of
the command, as with a real server; every timed ask must report all its calls served from the cache.

Bytecode is cached as in an installed package: the commands run without ``PYTHONDONTWRITEBYTECODE``, with a
temporary ``PYTHONPYCACHEPREFIX``, after one warm-up run each (otherwise every run recompiles pagemind).

    python benchmarks/startup.py                                   # the installed pagemind, series "after"
    python benchmarks/startup.py --also before=/tmp/old/src        # and another (e.g. a git archive's src/),
                                                                   # measured in the same rounds
Each label is a series in ``results/startup.json``; series already there under other labels are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, write_result
from pagemind.llm.mockserver import MockServer
from scale import mock_reply

SHORT_QUESTION = "Who finds the map, and why?"
LONG_QUESTION = "What did Isobel write against the gull?"
HEAVY = ("numpy", "scipy", "matplotlib", "onnxruntime", "tree_sitter", "llama_cpp", "faiss", "httpx", "jinja2",
         "yaml", "asyncio", "pagemind.agent", "pagemind.eval", "pagemind.retrieval.index")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the child, the finished process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def check(name: str, done: subprocess.CompletedProcess, cached: bool) -> None:
    if done.returncode != 0:
        raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if cached and "all served from the cache" not in done.stderr:
        raise SystemExit(f"{name} was not answered from the cache:\n{done.stderr[-2000:]}")


def loaded_modules(env: dict[str, str], module: str) -> dict:
    """How many modules ``import module`` loads, and which of HEAVY."""
    probe = (f"import sys, json; before = set(sys.modules); import {module}; "
             f"print(json.dumps(sorted(set(sys.modules) - before)))")
    names = json.loads(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                      check=True).stdout)
    return {"modules": len(names), "heavy": [h for h in HEAVY if h in names]}


def series_env(base: dict[str, str], tmp: Path, label: str, src: str | None) -> dict[str, str]:
    env = dict(base, PYTHONPYCACHEPREFIX=str(tmp / label / "pycache"), PAGEMIND_STORE=str(tmp / label / "store.db"))
    if src:
        env["PYTHONPATH"] = str(Path(src).resolve())
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--label", default="after", help="the name of the installed pagemind's series")
    parser.add_argument("--src", help="measure the pagemind package in this directory instead (PYTHONPATH)")
    parser.add_argument("--also", action="append", default=[], metavar="LABEL=DIR",
                        help="another series measured in the same rounds (e.g. before=/tmp/old/src)")
    parser.add_argument("--note", default="", help="what the series measure (e.g. the commits)")
    args = parser.parse_args()
    series = [(args.label, args.src)] + [tuple(a.split("=", 1)) for a in args.also]  # type: ignore[misc]

    with tempfile.TemporaryDirectory() as tmp, MockServer(latency=0.0, text=mock_reply) as server:
        base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
        envs = {label: series_env(base, Path(tmp), label, src) for label, src in series}
        py = [sys.executable]
        llm = ["--llm", "openai:mock", "--base-url", server.url, "--context-window", "16384"]
        commands = {
            "python -c pass": (py + ["-c", "pass"], False),
            "import pagemind": (py + ["-c", "import pagemind"], False),
            "pagemind --help": (py + ["-m", "pagemind", "--help"], False),
            "pagemind methods": (py + ["-m", "pagemind", "methods"], False),
            "ask --sample (cached)": (py + ["-m", "pagemind", "ask", "--sample", SHORT_QUESTION, *llm], True),
            "ask --long-sample -m readagent-p (cached)": (
                py + ["-m", "pagemind", "ask", "--long-sample", LONG_QUESTION, "-m", "readagent-p", *llm], True),
        }
        for label, env in envs.items():
            where = subprocess.run(py + ["-c", "import pagemind; print(pagemind.__file__)"], env=env,
                                   capture_output=True, text=True, check=True).stdout.strip()
            print(f"{label}: {where}", file=sys.stderr)
            for name, (command, _) in commands.items():  # warm-up: bytecode written, memories built, answers cached
                check(name, timed(command, env)[2], False)
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.runs):  # rounds: every command of every series in turn, so load changes hit all alike
            for name, (command, cached) in commands.items():
                for label, env in envs.items():
                    wall, cpu, done = timed(command, env)
                    check(f"{label}: {name}", done, cached)
                    samples.setdefault((label, name), []).append((wall, cpu))
        load = [round(x, 2) for x in os.getloadavg()]
        results = {}
        for label, env in envs.items():
            rows = []
            for name in commands:
                walls, cpus = zip(*samples[(label, name)])
                rows.append({"command": name, "wall_median_s": round(statistics.median(walls), 3),
                             "wall_min_s": round(min(walls), 3), "cpu_median_s": round(statistics.median(cpus), 3)})
                print(f"{label:<8} {name:<44} wall {rows[-1]['wall_median_s']:.3f} s (min {rows[-1]['wall_min_s']:.3f})"
                      f"  cpu {rows[-1]['cpu_median_s']:.3f} s", file=sys.stderr)
            results[label] = {"note": args.note, "runs": args.runs, "cpus": os.cpu_count(),
                              "load_average_1_5_15_at_end": load, "commands": rows,
                              "imports": {m: loaded_modules(env, m) for m in ("pagemind", "pagemind.cli.main")}}

    path = RESULTS / "startup.json"
    kept = json.loads(path.read_text()).get("series", {}) if path.exists() else {}
    write_result("startup", {"method": __doc__.split("\n\n")[0].strip(), "series": {**kept, **results}})


if __name__ == "__main__":
    main()
