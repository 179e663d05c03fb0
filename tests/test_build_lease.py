"""One build per memory: a second builder of the same memory (thread, process, replica) waits and uses the first
one's memory; a builder that died is taken over and the build resumes from its stored items."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from helpers import first_words_gist, make_text, middle_label
from pagemind import LLM, Document, ScriptedLLM, Store
from pagemind.leases import HOST, Lease
from pagemind.methods import registry
from pagemind.store import StoreResponseCache

TEXT = make_text(40, 60)


class Slow:
    def __init__(self, reply, delay=0.02):
        self.reply, self.delay = reply, delay

    def __call__(self, request):
        time.sleep(self.delay)
        return self.reply(request)


def reader(fake, store):
    llm = LLM(fake, cache=StoreResponseCache(store), concurrency=2)
    return registry.get("readagent-p")(llm, store, preset="quality")


def test_two_threads_building_one_memory_build_it_once(tmp_path):
    path = tmp_path / "s.db"
    gate = threading.Event()  # the first builder's first call waits here until the second builder is waiting

    def held(request):
        assert gate.wait(20), "the second builder never waited"
        return middle_label(request)

    fakes = [ScriptedLLM(by_role={"paginate": held, "gist": first_words_gist}),
             ScriptedLLM(by_role={"paginate": Slow(middle_label), "gist": first_words_gist})]
    memories, phases = [], []

    def build(fake):
        store = Store(path)  # each its own connection, as two processes would have
        memory = reader(fake, store).build(Document.from_text(TEXT), progress=lambda p, *a: phases.append(p))
        memories.append([(p.start, p.end) for p in memory.pages])

    threads = [threading.Thread(target=build, args=(f,)) for f in fakes]
    threads[0].start()
    deadline = time.monotonic() + 20
    while not fakes[0].history and time.monotonic() < deadline:  # the first holds the lease, in its first call
        time.sleep(0.01)
    threads[1].start()
    while not any("waiting for the build" in p for p in phases) and time.monotonic() < deadline:
        time.sleep(0.01)
    gate.set()
    for t in threads:
        t.join()
    calls = [len(f.history) for f in fakes]
    assert calls[0] > 0 and calls[1] == 0  # one built, the other waited and loaded
    assert memories[0] == memories[1]
    assert any("waiting for the build" in p for p in phases)
    assert Store(path).lease_holder("build:" + Store(path).list_memories()[0].key) is None  # released


def test_a_dead_builders_lease_is_taken_over_at_once(tmp_path):
    store = Store(tmp_path / "s.db")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)  # a process that has exited
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    r = reader(fake, store)
    key = r.memory_key(Document.from_text(TEXT))
    assert store.try_lease(f"build:{key}", "someone", pid, HOST, lambda holder: False)
    started = time.monotonic()
    memory = r.build(Document.from_text(TEXT))
    assert time.monotonic() - started < 5 and memory.pages and fake.history


def test_a_live_holder_elsewhere_is_waited_for_until_its_lease_goes_stale(tmp_path):
    store = Store(tmp_path / "s.db")
    assert store.try_lease("job", "other", 1, "another-host", lambda holder: False)
    lease = Lease(store, "job", stale_after=0.6, poll=0.05)
    started = time.monotonic()
    with lease.held():
        waited = time.monotonic() - started
        assert store.lease_holder("job").owner == lease.owner
    assert 0.5 <= waited < 5
    assert store.lease_holder("job") is None
