"""A run directory: its configuration and its append-only records, written so a killed run loses nothing.

``config.json`` names the run (dataset, parameters, seed, budget, model, method options...). Resuming with a
different identity is an error; adding methods, raising ``--limit`` or raising a widening parameter of the set
(nested-kv's ``seeds``) extends the run. ``examples.jsonl`` gets one line per finished (example, method),
``builds.jsonl`` one line per memory build; each line is flushed and synced as it is written. A line cut short by
a kill is ignored on reading, and the last record of an example wins (``--retry-errors`` appends a new record
for a failed example); for builds the report keeps the first finished one, which holds the build's cost.

"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import ConfigError

IDENTITY = ("dataset", "params", "seed", "budget", "model", "raters", "by_document", "unanswerable",
            "short_answers", "ids")
EXAMPLES, BUILDS, CONFIG = "examples.jsonl", "builds.jsonl", "config.json"


def default_run_dir(dataset: str, now: float | None = None) -> Path:
    return Path("runs") / f"{dataset}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}"


def jsonable(value: Any) -> Any:
    """A JSON round trip (tuples become lists, unknown objects strings)."""
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def _widen(old: Any, new: Any, widening: tuple[str, ...]) -> dict[str, Any] | None:
    """The stored parameters after resuming with ``new``: each widening parameter at its larger value; None
    when another parameter differs (or a widening one is not an integer)."""
    old, new = dict(old or {}), dict(new or {})
    if old.keys() != new.keys() or any(old[k] != new[k] for k in old if k not in widening):
        return None  # a parameter given on one side only stands for its default: another run
    merged = dict(new)
    for key in widening:
        if key in old and old[key] != new[key]:
            try:
                merged[key] = max(old[key], new[key], key=int)
            except (TypeError, ValueError):
                return None
    return merged


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.skipped = 0  # unreadable lines seen by the last read()

    # --- configuration ------------------------------------------------------------------------------
    def config(self) -> dict[str, Any] | None:
        file = self.path / CONFIG
        if not file.exists():
            return None
        try:
            return json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ConfigError(f"{file}: not valid JSON ({err.msg})") from None

    def start(self, config: dict[str, Any], widening: tuple[str, ...] = ()) -> dict[str, Any]:
        """Write ``config`` (a new run) or merge it into the stored one (a resumed run); returns what is stored.
        ``widening``: parameters that, like ``limit``, may differ on resuming; the larger value is stored."""
        config = jsonable(config)
        old = self.config()
        if old is not None:
            params = _widen(old.get("params"), config.get("params"), widening)
            diff = [k for k in IDENTITY if (params is None if k == "params" else old.get(k) != config.get(k))]
            if params is not None:
                config["params"] = params
            for method, opts in (config.get("method_options") or {}).items():
                if method in (old.get("method_options") or {}) and old["method_options"][method] != opts:
                    diff.append(f"options of {method}")
            if diff:
                raise ConfigError(f"{self.path} holds another run (different {', '.join(diff)}); "
                                  "use a new --run-dir, or the same settings to resume")
            config = {**old, **config,
                      "methods": list(dict.fromkeys(old.get("methods", []) + config.get("methods", []))),
                      "method_options": {**old.get("method_options", {}), **config.get("method_options", {})},
                      "limit": None if None in (old.get("limit"), config.get("limit"))
                      else max(old["limit"], config["limit"]),
                      "commands": old.get("commands", []) + config.get("commands", [])}
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / CONFIG).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return config

    # --- records -----------------------------------------------------------------------------------
    def append(self, name: str, record: dict[str, Any]) -> None:
        line = json.dumps(jsonable(record), ensure_ascii=False) + "\n"
        with self._lock:
            self.path.mkdir(parents=True, exist_ok=True)
            with open(self.path / name, "a+b") as f:
                if f.tell() > 0:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        line = "\n" + line  # end the line a kill cut short; reading skips it
                f.write(line.encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())

    def read(self, name: str = EXAMPLES) -> list[dict[str, Any]]:
        """Every complete record in file order; lines cut short by a kill are skipped (and counted)."""
        file = self.path / name
        self.skipped = 0
        if not file.exists():
            return []
        out = []
        for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                self.skipped += 1
                continue
            if isinstance(record, dict):
                out.append(record)
        return out

    def latest(self, name: str = EXAMPLES) -> dict[str, dict[str, Any]]:
        """The last record of every key."""
        return {r["key"]: r for r in self.read(name) if "key" in r}


def record_key(method: str, item_id: str) -> str:
    return f"{method}|{item_id}"

