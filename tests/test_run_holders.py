"""A run left "running" by a process that stopped does not stay running: its recorder holds the lease ``run:<id>``,
and reading the run once the holder is gone reports it failed ("interrupted: ..."). On SQLite and on Postgres."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from pagemind.leases import HOST
from pagemind.runs import INTERRUPTED, Runs
from pagemind.store import open_store
from pg import pg_server, pg_url  # noqa: F401

HOLDER = """
import sys, time
import pagemind.leases
pagemind.leases.HOST = sys.argv[2]
from pagemind.runs import Runs
from pagemind.store import open_store
runs = Runs(open_store(sys.argv[1]))
run = runs.create("index", "doc", method="full", user_id=None)
with runs.recorder(run).running() as rec:
    rec.step("phase", phase="reading", done=0, total=1, unit="page")
    print(run.id, flush=True)
    time.sleep(120)
"""
QUEUER = """
import sys, time
from pagemind.runs import Runs
from pagemind.store import open_store
print(Runs(open_store(sys.argv[1])).create("ask", "doc").id, flush=True)
time.sleep(120)
"""


@pytest.fixture(params=["sqlite", "postgres"])
def spec(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "s.db")
    return request.getfixturevalue("pg_url")


def holder(spec: str, host: str = HOST) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, spec, host], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline().strip()  # type: ignore[union-attr]
    assert line.startswith("run_"), "the holder process did not start its run"
    return process, line


def test_a_killed_processs_run_is_reported_failed_and_a_live_ones_is_not(spec):
    store = open_store(spec)
    runs = Runs(store)
    process, run_id = holder(spec)
    try:
        assert runs.get(run_id).status == "running"  # alive: left alone
        assert [r.id for r in runs.list(status="running")] == [run_id]
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    time.sleep(0.2)  # Postgres sees the closed connection
    run = runs.get(run_id)
    assert run.status == "failed" and run.error == INTERRUPTED and run.finished is not None
    steps = runs.steps(run_id)
    assert [s.kind for s in steps] == ["phase", "error"] and steps[-1].data["error"] == INTERRUPTED
    assert runs.list(status="running") == []
    assert runs.get(run_id) == run  # settled once: no second error step
    assert len(runs.steps(run_id)) == 2
    assert store.lease_holder(f"run:{run_id}") is None
    store.close()


def test_a_run_listed_running_is_settled_by_list_too(spec):
    store = open_store(spec)
    runs = Runs(store)
    process, run_id = holder(spec)
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(0.2)
    assert [(r.id, r.status, r.error) for r in runs.list()] == [(run_id, "failed", INTERRUPTED)]
    store.close()


def test_a_live_holder_on_another_host_is_never_ended_by_time(tmp_path):
    store = open_store(str(tmp_path / "s.db"))
    runs = Runs(store)
    run = runs.create("turn", "1")
    store.update_run(run.id, status="running", started=time.time() - 86400)
    assert store.try_lease(f"run:{run.id}", "elsewhere", 4242, "another-host", lambda holder: True)
    assert runs.get(run.id).status == "running"  # a long LLM call on another machine is not a dead process


def test_on_postgres_a_holder_elsewhere_is_seen_gone_when_its_connection_closes(pg_url):
    store = open_store(pg_url)
    runs = Runs(store)
    process, run_id = holder(pg_url, host="another-host")
    try:
        assert runs.get(run_id).status == "running"
        assert store.lease_holder(f"run:{run_id}").host == "another-host"  # so its pid tells nothing here
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    deadline = time.monotonic() + 10
    while runs.get(run_id).status == "running":
        assert time.monotonic() < deadline, "the closed connection was not noticed"
        time.sleep(0.1)
    assert runs.get(run_id).error == INTERRUPTED
    store.close()


def test_a_queued_run_of_a_stopped_process_is_interrupted_too(spec):
    store = open_store(spec)
    runs = Runs(store)
    process = subprocess.Popen([sys.executable, "-c", QUEUER, spec], stdout=subprocess.PIPE, text=True)
    run_id = process.stdout.readline().strip()  # type: ignore[union-attr]
    assert runs.get(run_id).status == "queued"
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(0.2)
    assert (runs.get(run_id).status, runs.get(run_id).error) == ("failed", INTERRUPTED)
    store.close()


def test_a_run_that_ends_normally_releases_its_lease_and_keeps_its_status(tmp_path):
    store = open_store(str(tmp_path / "s.db"))
    runs = Runs(store)
    run = runs.create("ask", "doc")
    with runs.recorder(run).running() as rec:
        assert store.lease_holder(f"run:{run.id}").pid == os.getpid()
        assert store.lease_holder(f"run:{run.id}").host == HOST
        rec.result({"answer": "x"})
    assert store.lease_holder(f"run:{run.id}") is None
    assert runs.get(run.id).status == "done"
    with pytest.raises(ValueError), runs.recorder(runs.create("ask", "doc")).running():
        raise ValueError("boom")
    assert [r.status for r in runs.list()] == ["failed", "done"]
    assert runs.list()[0].error == "ValueError: boom"
