"""What is particular to the Postgres store (tests/test_store.py runs the shared behaviour on both backends): its
migrations, refusing a newer store, turn locks across processes, archival vector search equal to SQLite's, choosing
the backend from a setting, and ``pagemind store copy`` between the two."""

import multiprocessing
import os
import re
import signal
import sqlite3
import time

import numpy as np
import pytest
from click.testing import CliRunner

from pagemind.agent import AgentOptions
from pagemind.agent.archive import Archive
from pagemind.agent.locks import TurnLock
from pagemind.agent.store import AgentStore
from pagemind.cli.main import cli
from pagemind.llm.base import LLMResponse, ToolCall
from pagemind.store import (
    BlockRow,
    EventRow,
    PassageRow,
    RunRow,
    Store,
    StoredVectors,
    StoreTooNew,
    open_store,
)
from pagemind.store.copy import NOT_COPIED, TABLES, copy_store
from pagemind.store.vectors import rank
from pg import new_database, pg_empty_url, pg_server, pg_url  # noqa: F401  (fixtures)

psycopg = pytest.importorskip("psycopg")
from pagemind.store.postgres import Postgres, PostgresStore  # noqa: E402
from pagemind.store.schema import MIGRATIONS  # noqa: E402


def _spawn():
    return multiprocessing.get_context("spawn")


# --- migrations --------------------------------------------------------------------------------------------
def test_migrations_are_applied_in_order_and_recorded(pg_empty_url):
    names = [m.name for m in MIGRATIONS]
    assert [int(re.match(r"m(\d+)_", n).group(1)) for n in names] == list(range(1, len(names) + 1))
    store = PostgresStore(pg_empty_url)
    assert store.applied_migrations() == names
    store.close()
    store = PostgresStore(pg_empty_url)  # opening again applies nothing
    assert store.applied_migrations() == names
    store.close()
    with psycopg.connect(pg_empty_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM _pagemind_migrations").fetchone()[0] == len(names)
        assert conn.execute("SELECT extname FROM pg_extension WHERE extname = 'vector'").fetchone() == ("vector",)


def test_a_store_from_a_newer_pagemind_is_refused_untouched(pg_empty_url):
    with psycopg.connect(pg_empty_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        conn.execute("CREATE TABLE _pagemind_migrations (name TEXT PRIMARY KEY, applied DOUBLE PRECISION NOT NULL, "
                     "position BIGINT GENERATED ALWAYS AS IDENTITY)")
        for statement in MIGRATIONS[0].statements("postgres", Postgres.types):
            conn.execute(statement)
        conn.execute("INSERT INTO _pagemind_migrations (name, applied) VALUES ('m001_initial', 0), ('m099_future', 0)")
    with pytest.raises(StoreTooNew, match=r"newer pagemind.*m099_future.*upgrade"):
        PostgresStore(pg_empty_url)
    with psycopg.connect(pg_empty_url) as conn:
        assert conn.execute("SELECT to_regclass('users')").fetchone()[0] is None  # m002 was not applied
        assert sorted(r[0] for r in conn.execute("SELECT name FROM _pagemind_migrations")) == ["m001_initial",
                                                                                               "m099_future"]


def _open(url, barrier, results):
    barrier.wait()
    try:
        PostgresStore(url).close()
        results.put("ok")
    except Exception as err:
        results.put(f"{type(err).__name__}: {err}")


def test_processes_opening_a_new_database_together_migrate_it_once(pg_empty_url):
    ctx = _spawn()
    barrier, results = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_open, args=(pg_empty_url, barrier, results)) for _ in range(3)]
    for p in procs:
        p.start()
    assert sorted(results.get(timeout=120) for _ in procs) == ["ok"] * 3
    for p in procs:
        p.join(30)
    store = PostgresStore(pg_empty_url)
    assert store.applied_migrations() == [m.name for m in MIGRATIONS]
    store.close()


def test_an_unreachable_database_is_a_clear_error(pg_server):
    bad = pg_server.get_uri().replace("/postgres?", "/no_such_db?")
    with pytest.raises(Exception, match=r"cannot open the Postgres store .*no_such_db"):
        PostgresStore(bad)


# --- turn locks across processes ---------------------------------------------------------------------------
def _turns(spec, name, n, barrier, results):
    store = open_store(spec)
    agents = AgentStore(store)
    agent_id = agents.get_agent(name).id
    lock = TurnLock(store, agent_id, timeout=120, poll=0.005)
    barrier.wait()
    for _ in range(n):
        with lock.held():  # read, pause, write: a second holder at once would lose an increment
            count = store.get_agent(name).state.get("count", 0)
            time.sleep(0.002)
            store.set_agent_state(agent_id, {"count": count + 1})
    store.close()
    results.put("done")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_one_turn_at_a_time_across_processes(backend, tmp_path, request):
    spec = str(tmp_path / "s.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
    store = open_store(spec)
    AgentStore(store).create_agent("ann", AgentOptions(), [])
    ctx = _spawn()
    barrier, results = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_turns, args=(spec, "ann", 15, barrier, results)) for _ in range(3)]
    for p in procs:
        p.start()
    assert [results.get(timeout=180) for _ in procs] == ["done"] * 3
    for p in procs:
        p.join(30)
    assert store.get_agent("ann").state == {"count": 45}
    assert store.lease_holder(f"agent:{store.get_agent('ann').id}") is None
    store.close()


def _hold(url, agent_id, ready):
    store = PostgresStore(url)
    assert store.try_lease(f"agent:{agent_id}", "doomed", os.getpid(), "another-host", lambda held: False)
    assert store.try_lease("build:k", "doomed", os.getpid(), "another-host", lambda held: False)
    ready.set()
    time.sleep(600)


def test_a_killed_holder_frees_the_lock_as_its_connection_closes(pg_url):
    store = PostgresStore(pg_url)
    agent = store.create_agent("ann", {}, {}, 0.0, [])
    ctx = _spawn()
    ready = ctx.Event()
    holder = ctx.Process(target=_hold, args=(pg_url, agent, ready))
    holder.start()
    try:
        assert ready.wait(120)
        never_stale = lambda held: False
        assert store.lease_holder(f"agent:{agent}").owner == "doomed"
        assert not store.try_lease(f"agent:{agent}", "me", os.getpid(), "here", never_stale)
        os.kill(holder.pid, signal.SIGKILL)
        holder.join(30)
        deadline = time.monotonic() + 20
        while not store.try_lease(f"agent:{agent}", "me", os.getpid(), "here", never_stale):
            assert time.monotonic() < deadline, "the dead holder's lock was never freed"
            time.sleep(0.05)
        assert store.lease_holder(f"agent:{agent}").owner == "me"
        assert store.try_lease("build:k", "me", os.getpid(), "here", never_stale)  # its lease too
    finally:
        if holder.is_alive():
            holder.kill()
        store.close()


def test_leases_one_holder_at_a_time(pg_url):
    store = PostgresStore(pg_url)
    assert store.lease_holder("build:k") is None
    assert store.try_lease("build:k", "me", 1, "h", lambda held: False)
    assert store.try_lease("build:k", "me", 1, "h", lambda held: False)  # ours already
    assert not store.try_lease("build:k", "you", 2, "h", lambda held: False)
    assert store.try_lease("build:other", "you", 2, "h", lambda held: False)
    before = store.lease_holder("build:k").refreshed
    store.refresh_lease("build:k", "me")
    assert store.lease_holder("build:k").refreshed >= before
    assert store.try_lease("build:k", "you", 2, "h", lambda held: held.owner == "me")  # a stale holder
    store.release_lease("build:k", "me")  # not the holder: nothing happens
    assert store.lease_holder("build:k").owner == "you"
    store.release_lease("build:k", "you")
    assert store.lease_holder("build:k") is None
    store.close()


# --- archival vector search --------------------------------------------------------------------------------
def _unit_vectors(n, dim, seed):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _fill(store, vectors):
    agent = store.create_agent("ann", {}, {}, 0.0, [])
    other = store.create_agent("bob", {}, {}, 0.0, [])
    rows = [PassageRow(f"p{i}", "2024-01-01", embedding=v.tobytes(), embedder="e") for i, v in enumerate(vectors)]
    rows.append(PassageRow("dup", "2024-01-01", embedding=vectors[7].tobytes(), embedder="e"))  # an exact tie
    rows.append(PassageRow("no vector", "2024-01-01"))
    store.insert_agent_passages(agent, rows)
    store.insert_agent_passages(other, rows[:50])  # another agent's passages are never returned
    return agent


def test_archival_vector_search_equals_sqlite(tmp_path, pg_url):
    vectors = _unit_vectors(1500, 48, 1)
    lite, pg = Store(tmp_path / "s.db"), PostgresStore(pg_url)
    a_lite, a_pg = _fill(lite, vectors), _fill(pg, vectors)
    queries = _unit_vectors(12, 48, 2)
    queries[0] = vectors[7]  # the tie between passage 7 and its duplicate: both orders break it by id
    for q in queries:
        for limit in (1, 5, 40, None):
            expected = lite.nearest_agent_passages(a_lite, "e", q.tobytes(), limit)
            assert pg.nearest_agent_passages(a_pg, "e", q.tobytes(), limit) == expected
            assert expected[0] == 1501
    lite_ids = lite.nearest_agent_passages(a_lite, "e", queries[0].tobytes(), 3)[1]
    assert lite_ids[:2] == [8, 1501]  # passage 7 (id 8) and its duplicate, ties by id
    assert pg.nearest_agent_passages(a_pg, "other-embedder", queries[0].tobytes(), 5) == (0, [])
    lite.close()
    pg.close()


def test_the_hnsw_index_serves_large_archives_and_its_results_are_ranked_exactly(pg_url):
    vectors = _unit_vectors(3000, 32, 3)
    store = PostgresStore(pg_url, exact_up_to=1000)  # beyond 1000 passages: the index finds the candidates
    agent = _fill(store, vectors)
    index = "SELECT to_regclass('agent_passages_hnsw_32')"
    assert store.execute(index).fetchone()[0] is None  # a bulk load maintains no index row by row
    q = _unit_vectors(1, 32, 5)[0]
    assert len(store.nearest_agent_passages(agent, "e", q.tobytes(), 5)[1]) == 5
    assert store.execute(index).fetchone()[0] is not None  # the first search that needs it built it
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE agent_passages")  # as autovacuum would: the planner then knows the table's size
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM agent_passages WHERE agent_id = 1 AND embedder = 'e' AND vector_dims(vec) = 32 "
            "ORDER BY vec::vector(32) <#> %s::vector(32) LIMIT 26", (str(vectors[0].tolist()),)))
    assert "agent_passages_hnsw_32" in plan
    assert len(store.db._hnsw_candidates(store, agent, "e", q, 26)) == 26  # the index path, not the exact fallback
    rows = store.agent_passage_vectors(agent, "e")
    found = 0
    for q in _unit_vectors(20, 32, 4):
        total, ids = store.nearest_agent_passages(agent, "e", q.tobytes(), 5)
        exact = rank(rows, q.tobytes(), 5)
        assert total == 3001 and len(ids) == 5
        assert ids == rank([r for r in rows if r[0] in ids], q.tobytes())  # in the exact order
        found += len(set(ids) & set(exact))
    assert found / 100 >= 0.95  # the index's recall at ef_search >= 52
    store.close()


def _archives(tmp_path, pg_url, name, texts, page_size):
    """An agent's archive holding ``texts`` on SQLite, then the same on Postgres: (store, agents, its id, archive)."""
    options = AgentOptions(archival_search="semantic", embedder="hashing", page_size=page_size)
    for store in (Store(tmp_path / f"{name}.db"), PostgresStore(pg_url)):
        agents = AgentStore(store)
        record = agents.create_agent(name, options, [])
        archive = Archive(agents, record.id, options)
        archive.insert(texts, "2024-01-01")
        yield store, agents, record.id, archive


def test_an_agents_archive_searches_alike_on_both_backends(tmp_path, pg_url):
    pages = []
    notes = [f"note {i}: the {w} is {c}" for i, (w, c) in enumerate(
        [("boat", "red"), ("car", "blue"), ("house", "green"), ("boat", "blue"), ("kite", "red")] * 8)]
    for store, _, _, archive in _archives(tmp_path, pg_url, "ann", notes, 3):
        pages.append([archive.search("which boat is blue", p).render() for p in range(3)])
        store.close()
    assert pages[0] == pages[1] and "of 40" in pages[0][0]


def test_a_forgotten_passage_leaves_search_and_comes_back_alike_on_both_backends(tmp_path, pg_url):
    """Issue 50: forgetting moves a passage out of the archive (search, listing and counts no longer see it; a fact
    it had superseded holds again); restoring gives it back under its own id, superseding again — on SQLite and on
    Postgres with pgvector alike."""
    seen = []
    facts = ["The user lives in York.", "The user lives in Leeds now.", "The boat is red."]
    for store, agents, agent_id, archive in _archives(tmp_path, pg_url, "fay", facts, 5):
        assert agents.supersede(agent_id, 1, 2, "2024-02-01 10:00:00")
        gone = agents.forget(agent_id, 2, "api: ann", 100.0)
        assert gone is not None and gone.text == "The user lives in Leeds now."
        after = [archive.search("where does the user live", 0).render(), store.count_agent_passages(agent_id),
                 agents.superseded(agent_id), agents.forgotten(agent_id)]
        assert agents.forget(agent_id, 2, "again", 101.0) is None
        back = agents.restore(agent_id, 2)
        restored = [back.id if back else None, agents.superseded(agent_id),
                    archive.search("where does the user live", 0).render(), agents.forgotten(agent_id)]
        seen.append((after, restored))
        store.close()
    (after, restored), other = seen[0], seen[1]
    assert (after, restored) == other
    assert "Leeds" not in after[0] and "York" in after[0] and after[1] == 2 and after[2] == {}
    assert after[3] == [(2, "The user lives in Leeds now.", "api: ann", 100.0)]
    assert restored[0] == 2 and restored[1] == {1: 2} and "Leeds" in restored[2] and restored[3] == []


# --- choosing the backend ----------------------------------------------------------------------------------
def test_open_store_picks_the_backend_from_the_setting(tmp_path, pg_url, monkeypatch):
    lite = open_store(tmp_path / "s.db")
    assert isinstance(lite, Store)
    assert open_store(lite) is lite
    lite.close()
    pg = open_store(pg_url)
    assert isinstance(pg, PostgresStore)
    pg.close()
    from pagemind import Pagemind
    from pagemind.llm.fake import ScriptedLLM

    monkeypatch.setenv("PAGEMIND_STORE", pg_url)
    with Pagemind(ScriptedLLM()) as pm:
        assert isinstance(pm.store, PostgresStore)


# --- pagemind store copy -----------------------------------------------------------------------------------
def _everything(store):
    """A store with rows in every table pagemind copies."""
    store.put_document("d1", "book.txt", 3, 11)
    store.put_document("d2", "other.txt", 5, 20)
    store.put_document_text("d1", "three words here")
    store.open_memory("k1", "d1", "readagent", {"preset": "fast"}, "m")
    store.put_items("k1", "page", [(0, {"text": "abc"}), (1, {"text": "déf"})])
    store.add_build_usage("k1", {"calls": 2, "prompt_tokens": 100, "seconds": 1.25}, False)
    store.mark_complete("k1")
    store.put_embeddings("e", {"h1": StoredVectors(2, 3, np.arange(6, dtype=np.float32).tobytes())})
    store.put_response("r1", LLMResponse("hi", 10, 2, 0.5, "m", finish_reason="tool_calls",
                                         tool_calls=(ToolCall("send_message", '{"message": "hi"}'),)))
    store.put_response("r2", LLMResponse("plain", 1, 1, 0.1, "m"))
    store.put_file_read("f1", "d1", "three words here", {"format": "pdf", "pages": [0]})
    store.put_token_count("t1", 42)
    user = store.create_user("alice", "hash1", 1.0)
    store.add_user_key(user, "hash2", 2.0)
    store.add_user_document(user, "d1", "my book", 3.0)
    shelf = store.create_library("u1", "shelf", 4.0)
    store.put_library_document(shelf.id, "b.txt", "d2", "/books/b.txt", 4.5)
    gone = store.create_agent("gone", {}, {}, 0.5, [])
    store.delete_agent("gone")  # ids with a gap: the copy keeps ids, it does not renumber
    agent = store.create_agent("ann", {"a": 1}, {"warned": True}, 1.0, [BlockRow("persona", "p", 10),
                                                                         BlockRow("human", "h", 20)])
    assert agent == gone + 1
    store.set_agent_owner(agent, user)
    store.append_agent_events(agent, [EventRow("user_message", {"message": "hi"}, "2024-01-01 10:00:00", text="hi"),
                                      EventRow("step", {"thoughts": "ok"}, "2024-01-01 10:00:01", text="ok")])
    store.evict_agent_events(agent, [1])
    ids = store.insert_agent_passages(agent, [PassageRow("The cat sat", "t0", summary="cat", source="b.txt",
                                                         embedding=_unit_vectors(1, 8, 0)[0].tobytes(), embedder="e"),
                                              PassageRow("A dog ran", "t1"), PassageRow("A fox ran", "t2")])
    store.forget_agent_passage(agent, ids[2], "cli", 7.0)
    store.try_lease(f"agent:{agent}", "me", 1, "h", lambda held: False)  # a turn lock: not copied
    store.create_run(RunRow("run_a", user, "ask", "readagent", "d1", {"question": "q?"}, "done", 5.0, 5.1, 6.0,
                            {"text": "a"}))
    store.create_run(RunRow("run_b", None, "turn", "memgpt", str(agent), {"message": "hi"}, "running", 5.0))
    store.append_run_step("run_a", "llm", {"tokens": 3}, 5.2)
    store.append_run_step("run_a", "result", {"text": "a"}, 5.9)
    return agent


def _dump(store):
    return {table: list(store.table_rows(table, columns)) for table, columns in TABLES}


def test_every_table_of_the_schema_is_copied_or_deliberately_not(tmp_path):
    db = sqlite3.connect(str(tmp_path / "s.db"))
    Store(tmp_path / "s.db").close()
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables -= {"sqlite_sequence", "_pagemind_migrations"}
    assert tables == {t for t, _ in TABLES} | set(NOT_COPIED)
    for table, columns in TABLES:  # and every column of each
        assert {r[1] for r in db.execute(f"PRAGMA table_info({table})")} == set(columns), table


def test_sqlite_to_postgres_to_sqlite_keeps_every_row(tmp_path, pg_url):
    first = Store(tmp_path / "a.db")
    agent = _everything(first)
    original = _dump(first)
    assert all(original.values())  # every table has rows to copy
    pg = PostgresStore(pg_url)
    report = copy_store(first, pg)
    assert report.ok and [t.copied for t in report.tables] == [len(original[t]) for t, _ in TABLES]
    assert _dump(pg) == original
    back = Store(tmp_path / "b.db")
    assert copy_store(pg, back).ok
    assert _dump(back) == original
    # the copies work as stores: the next ids follow the copied ones, search and locks behave
    for store in (pg, back):
        assert store.create_agent("new", {}, {}, 2.0, []) == agent + 1
        assert store.insert_agent_passages(agent, [PassageRow("x", "t2")]) == [3]
        assert store.nearest_agent_passages(agent, "e", _unit_vectors(1, 8, 0)[0].tobytes(), 1) == (1, [1])
        assert store.lease_holder(f"agent:{agent}") is None
        assert store.get_response("r1").tool_calls == (ToolCall("send_message", '{"message": "hi"}'),)
        assert [r.id for r in store.list_runs(None, all_users=True)] == ["run_b", "run_a"]
        assert store.list_memories()[0].build_usage["attempts"] == 1
    for store in (first, pg, back):
        store.close()


def test_the_cli_copies_compares_and_refuses_a_non_empty_destination(tmp_path, pg_url):
    src = tmp_path / "a.db"
    store = Store(src)
    _everything(store)
    store.close()
    runner = CliRunner()
    done = runner.invoke(cli, ["store", "copy", str(src), pg_url])
    assert done.exit_code == 0, done.output
    assert re.search(r"agent_passages\s+2\s+0\s+2\s+2\n", done.output)
    assert "every table's count matches" in done.output
    again = runner.invoke(cli, ["store", "copy", str(src), pg_url])
    assert again.exit_code == 1 and "not empty" in again.output and "--merge" in again.output
    clash = runner.invoke(cli, ["store", "copy", "--merge", str(src), pg_url])
    assert clash.exit_code == 1 and "agents" in clash.output and "cannot be merged" in clash.output
    missing = runner.invoke(cli, ["store", "copy", str(tmp_path / "nope.db"), pg_url])
    assert missing.exit_code == 1 and "no such store" in missing.output
    assert not (tmp_path / "nope.db").exists()


def test_merge_adds_what_the_destination_lacks(tmp_path, pg_url):
    src, dst = Store(tmp_path / "a.db"), PostgresStore(pg_url)
    for store, doc in ((src, "d1"), (dst, "d2")):
        store.put_document("shared", "s.txt", 1, 1)
        store.put_document(doc, f"{doc}.txt", 1, 1)
        store.put_response(f"r-{doc}", LLMResponse(doc, 1, 1, 0.1, "m"))
    src.create_agent("ann", {}, {}, 0.0, [BlockRow("human", "", 5)])
    report = copy_store(src, dst, merge=True)
    counts = {t.table: (t.source, t.before, t.copied, t.after) for t in report.tables}
    assert report.ok and counts["documents"] == (2, 2, 1, 3) and counts["agents"] == (1, 0, 1, 1)
    assert dst.get_agent("ann") is not None and dst.get_response("r-d2") is not None
    src.close()
    dst.close()
