"""The store: one implementation over two dialects, its migrations (order, old stores, newer stores, several
processes), batched writes, and that no SQL runs outside ``pagemind.store``."""

import inspect
import multiprocessing
import re
import sqlite3
from pathlib import Path

import pytest

from pagemind.llm.base import LLMResponse, ToolCall
from pagemind.store import (
    BlockRow,
    EventRow,
    LockHolder,
    PassageRow,
    RunRow,
    SQLStore,
    Store,
    StoredVectors,
    StoreResponseCache,
    StoreTooNew,
)
from pagemind.store.postgres import PostgresStore
from pagemind.store.schema import MIGRATIONS
from pagemind.store.sqlite import SQLite
from pg import pg_server, pg_url  # noqa: F401  (fixtures: a real Postgres, a fresh database per test)

SRC = Path(__file__).resolve().parents[1] / "src" / "pagemind"


@pytest.fixture(params=["sqlite", "postgres"])  # every test taking ``store`` runs on each backend
def store(request, tmp_path):
    if request.param == "sqlite":
        s = Store(tmp_path / "s.db")
    else:
        s = PostgresStore(request.getfixturevalue("pg_url"))  # a fresh database (tests/pg.py)
    yield s
    s.close()


def _migration(name):
    return next(m for m in MIGRATIONS if m.name == name)


def _old_store(path, names):
    """A store as an older pagemind left it: these migrations applied and recorded in this order."""
    db = sqlite3.connect(str(path), isolation_level=None)
    db.execute("CREATE TABLE _pagemind_migrations (name TEXT PRIMARY KEY, applied REAL)")
    for name in names:
        for statement in _migration(name).statements("sqlite", SQLite.types):
            db.execute(statement)
        db.execute("INSERT INTO _pagemind_migrations VALUES (?, 0)", (name,))
    return db


def _commits(store):
    """Count the transactions the store commits (an implementation detail of each backend, for the batching tests)."""
    seen = []
    store.db.on_commit = lambda: seen.append("COMMIT")
    return seen


# --- interface -------------------------------------------------------------------------------------------
def test_the_store_is_one_implementation_over_a_dialect():
    for store in (Store, PostgresStore):  # a database adds a dialect, not a second implementation
        assert issubclass(store, SQLStore) and set(vars(store)) - {"__module__", "__doc__"} == {"__init__"}
    text = (SRC / "store" / "sql.py").read_text(encoding="utf-8")
    assert "%s" not in text and "sqlite3" not in text and "psycopg" not in text
    public = [n for n, v in vars(SQLStore).items() if callable(v) and not n.startswith("_")]
    assert len(public) > 60
    undocumented = [n for n in public if not (inspect.getdoc(getattr(SQLStore, n)) or "").strip()
                    and len(inspect.getsource(getattr(SQLStore, n)).splitlines()) > 8]
    assert undocumented == []  # a method longer than a few lines says what it does


def test_no_sql_outside_the_store_package():
    sql = re.compile(r"\b(SELECT .+ FROM|INSERT (OR \w+ )?INTO|UPDATE \w+ SET|DELETE FROM|CREATE (TABLE|INDEX)|"
                     r"ALTER TABLE)\b|\._exec\(|\.execute(many)?\(\s*f?[\"']")
    offenders = [f"{p.relative_to(SRC)}:{i}" for p in SRC.rglob("*.py") if "store" not in p.relative_to(SRC).parts[:1]
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if sql.search(line)]
    assert offenders == []


# --- migrations ------------------------------------------------------------------------------------------
def test_migrations_are_registered_in_the_order_of_their_numbers():
    names = [m.name for m in MIGRATIONS]
    numbers = [int(re.match(r"m(\d+)_", n).group(1)) for n in names]
    assert numbers == list(range(1, len(names) + 1))
    store = Store(":memory:")
    assert store.applied_migrations() == names  # a new store applies them in that order
    store.close()


def test_a_store_migrated_in_the_old_order_opens_and_keeps_its_data(tmp_path):
    db = _old_store(tmp_path / "old.db", ["m001_initial", "m002_embeddings", "m004_tool_calls", "m003_agents"])
    db.execute("INSERT INTO documents VALUES ('d', 'book', 3, 11, 0)")
    db.execute("INSERT INTO agents (name, settings, state, created) VALUES ('ann', '{}', '{}', 0)")
    db.close()
    store = Store(tmp_path / "old.db")
    assert store.applied_migrations() == ["m001_initial", "m002_embeddings", "m004_tool_calls", "m003_agents",
                                          "m005_memory_build_usage", "m006_service", "m007_leases",
                                          "m008_memory_scope", "m009_one_lease", "m010_libraries",
                                          "m011_block_history", "m012_archival_audit",
                                          "m013_document_structure", "m014_cache_logprobs", "m015_file_reads",
                                          "m016_token_counts", "m017_forgotten_passages", "m018_run_usage"]
    assert [a.name for a in store.list_agents()] == ["ann"]
    record = store.open_memory("k", "d", "rag", {"a": 1}, "m")  # documents(id='d') exists: the FK holds
    assert record.status == "building"
    store.close()


def test_a_store_missing_a_middle_migration_gets_it(tmp_path):
    # written when m004 existed but m003 (agents) did not yet come before it
    _old_store(tmp_path / "old.db", ["m001_initial", "m002_embeddings", "m004_tool_calls"]).close()
    store = Store(tmp_path / "old.db")
    assert store.applied_migrations() == ["m001_initial", "m002_embeddings", "m004_tool_calls", "m003_agents",
                                          "m005_memory_build_usage", "m006_service", "m007_leases",
                                          "m008_memory_scope", "m009_one_lease", "m010_libraries",
                                          "m011_block_history", "m012_archival_audit",
                                          "m013_document_structure", "m014_cache_logprobs", "m015_file_reads",
                                          "m016_token_counts", "m017_forgotten_passages", "m018_run_usage"]
    assert store.create_agent("ann", {}, {}, 0.0, [BlockRow("human", "", 10)]) is not None
    store.close()


def test_a_store_from_a_newer_pagemind_is_refused_untouched(tmp_path):
    db = _old_store(tmp_path / "new.db", ["m001_initial"])
    db.execute("INSERT INTO _pagemind_migrations VALUES ('m099_future', 0)")
    db.close()
    with pytest.raises(StoreTooNew, match=r"newer pagemind.*m099_future.*upgrade"):
        Store(tmp_path / "new.db")
    db = sqlite3.connect(str(tmp_path / "new.db"))
    assert sorted(r[0] for r in db.execute("SELECT name FROM _pagemind_migrations")) == ["m001_initial",
                                                                                           "m099_future"]
    assert db.execute("SELECT 1 FROM sqlite_master WHERE name = 'embeddings'").fetchone() is None  # nothing applied
    db.close()


def _open(path, barrier, results):
    barrier.wait()  # every process migrates the same fresh file at the same moment
    try:
        store = Store(path)
        store.close()
        results.put("ok")
    except Exception as err:
        results.put(f"{type(err).__name__}: {err}")


def test_processes_opening_a_new_store_together_all_succeed(tmp_path):
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_open, args=(str(tmp_path / "new.db"), barrier, results)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert sorted(results.get(timeout=5) for _ in procs) == ["ok"] * 4
    store = Store(tmp_path / "new.db")  # and the schema is complete once
    assert sorted(store.applied_migrations()) == sorted(m.name for m in MIGRATIONS)
    store.close()


# --- memories and batched writes -------------------------------------------------------------------------
def test_items_are_written_in_one_commit_per_batch(store):
    store.put_document("d", "book", 3, 11)
    store.open_memory("k", "d", "rag", {}, "m")
    commits = _commits(store)
    store.put_items("k", "fragment", [(i, {"text": f"f{i}"}) for i in range(200)])
    assert len(commits) == 1
    store.put_embeddings("e", {f"h{i}": StoredVectors(1, 2, bytes(8)) for i in range(200)})
    assert len(commits) == 2
    assert [p["text"] for p in store.items("k", "fragment")][:3] == ["f0", "f1", "f2"]
    assert store.count_embeddings("e") == 200


def test_fragments_and_embeddings_commit_or_roll_back_together(store):
    store.put_document("d", "book", 3, 11)
    store.open_memory("k", "d", "rag", {}, "m")
    with pytest.raises(RuntimeError), store.transaction():
        store.put_items("k", "fragment", [(0, {"text": "a"}), (1, {"text": "b"})])
        store.put_embeddings("e", {"h": StoredVectors(1, 1, bytes(4))})
        raise RuntimeError("killed half-way")
    assert store.items("k", "fragment") == [] and store.count_embeddings() == 0
    commits = _commits(store)
    with store.transaction():
        store.put_items("k", "fragment", [(0, {"text": "a"}), (1, {"text": "b"})])
        store.put_embeddings("e", {"h": StoredVectors(1, 1, bytes(4))})
    assert len(commits) == 1
    assert store.items("k", "fragment") == [{"text": "a"}, {"text": "b"}] and store.count_embeddings("e") == 1


def test_memory_items_resume_and_complete(store):
    store.put_document("d", "book", 3, 11)
    store.put_document("d", "renamed", 9, 99)  # once: the second call changes nothing
    assert store.open_memory("k", "d", "readagent", {"x": 1}, "m").status == "building"
    for i in range(5):
        store.put_item("k", "page", i, {"i": i})
    store.delete_items("k", "page", 3)
    assert list(store.iter_items("k", "page")) == [(0, {"i": 0}), (1, {"i": 1}), (2, {"i": 2})]
    store.mark_complete("k")
    (record,) = store.memories_for("d", "readagent")
    assert (record.key, record.status, record.settings) == ("k", "complete", {"x": 1})
    assert store.memories_for("d", "rag") == [] and store.get_memory("nope") is None


# --- caches ----------------------------------------------------------------------------------------------
def test_embeddings_round_trip_by_model_and_hash(store):
    store.put_embeddings("e1", {"a": StoredVectors(2, 3, bytes(range(24))), "b": StoredVectors(1, 1, b"\0\0\0\1")})
    store.put_embeddings("e2", {"a": StoredVectors(1, 1, b"zzzz")})
    found = store.get_embeddings("e1", ["a", "missing", "a"])
    assert found == {"a": StoredVectors(2, 3, bytes(range(24)))}
    assert store.get_embeddings("e2", ["a"])["a"].data == b"zzzz"
    assert (store.count_embeddings(), store.count_embeddings("e1"), store.count_embeddings("e3")) == (3, 2, 0)
    many = [f"h{i}" for i in range(1200)]  # more than one IN (...) batch
    store.put_embeddings("e3", {h: StoredVectors(1, 1, bytes(4)) for h in many[::2]})
    assert len(store.get_embeddings("e3", many)) == 600


def test_response_cache_round_trip_with_tool_calls(store):
    cache = StoreResponseCache(store)
    assert cache.get("k") is None
    reply = LLMResponse("hi", 10, 2, 0.5, "m", finish_reason="tool_calls",
                        tool_calls=(ToolCall("send_message", '{"message": "hi"}'),))
    cache.put("k", reply)
    got = cache.get("k")
    assert got.cached and got.tool_calls == reply.tool_calls
    assert (got.text, got.prompt_tokens, got.completion_tokens, got.finish_reason) == ("hi", 10, 2, "tool_calls")


# --- agents ----------------------------------------------------------------------------------------------
def test_agent_names_are_unique_and_a_refused_create_writes_nothing(store):
    first = store.create_agent("ann", {"a": 1}, {}, 1.0, [BlockRow("persona", "p", 10), BlockRow("human", "", 20)])
    assert store.create_agent("ann", {}, {}, 2.0, [BlockRow("other", "x", 5)]) is None
    assert store.agent_blocks(first) == [BlockRow("persona", "p", 10), BlockRow("human", "", 20)]
    assert [(a.name, a.settings) for a in store.list_agents()] == [("ann", {"a": 1})]
    store.set_agent_state(first, {"warned": True})
    assert store.get_agent("ann").state == {"warned": True}
    assert store.delete_agent("ann") and not store.delete_agent("ann")
    assert store.agent_blocks(first) == [] and store.get_agent("ann") is None


def test_agent_events_queue_search_and_eviction(store):
    agent = store.create_agent("ann", {}, {}, 0.0, [])
    other = store.create_agent("bob", {}, {}, 0.0, [])
    seqs = store.append_agent_events(agent, [
        EventRow("user_message", {"message": "50% off"}, "2024-01-01 10:00:00", text="50% off"),
        EventRow("step", {"thoughts": "ok"}, "2024-01-02 10:00:00", text="ok"),
        EventRow("function_result", {"message": "50% done"}, "2024-01-02 10:00:01", text="50% done")])
    assert seqs == [1, 2, 3]
    assert store.append_agent_events(other, [EventRow("user_message", {}, "2024-01-01 00:00:00", text="50%")]) == [1]
    total, rows = store.search_agent_events(agent, ["user_message", "step"], query="50%")
    assert total == 1 and rows[0].payload == {"message": "50% off"}  # % is literal, kinds and agent scoped
    assert store.search_agent_events(agent, ["user_message", "step"], query="_")[0] == 0
    total, rows = store.search_agent_events(agent, ["user_message", "step"], start="2024-01-02")
    assert (total, [r.seq for r in rows]) == (1, [2])
    store.evict_agent_events(agent, [1, 2])
    (note_seq,) = store.append_agent_events(agent, [EventRow("summary", {"message": "s"}, "2024-01-03 00:00:00")])
    assert [r.seq for r in store.agent_queue(agent)] == [note_seq, 3]  # the summary first
    assert store.count_agent_events(agent) == 4 and store.count_agent_events(agent, in_context=False) == 2
    assert [r.seq for r in store.agent_events(agent, [3, 99, 1])] == [3, 1]
    assert [r.seq for r in store.recent_agent_events(agent, 2)] == [3, 4]
    assert [(seq, text) for seq, text, _ in store.agent_event_texts(agent, ["user_message", "step"])] == [
        (1, "50% off"), (2, "ok")]
    assert [time for _, _, time in store.agent_event_texts(agent, ["user_message"])] == ["2024-01-01 10:00:00"]


def test_agent_passages_and_turn_locks(store):
    agent = store.create_agent("ann", {}, {}, 0.0, [])
    ids = store.insert_agent_passages(agent, [PassageRow("The cat sat", "t0", summary="cat", embedding=b"1234",
                                                         embedder="e"), PassageRow("A dog ran", "t1", source="b")])
    assert store.count_agent_passages(agent) == 2
    total, rows = store.search_agent_passages(agent, "CAT")
    assert total == 1 and rows[0] == PassageRow("The cat sat", "t0", "cat", None, id=ids[0])
    assert store.agent_passage_vectors(agent, "e") == [(ids[0], b"1234")]
    assert store.agent_passage_texts(agent) == [(ids[0], "cat The cat sat"), (ids[1], " A dog ran")]
    assert [p.text for p in store.agent_passages(agent, [ids[1], ids[0]])] == ["A dog ran", "The cat sat"]

    lease = f"agent:{agent}"  # an agent's turn lock is a lease like a build's
    assert store.try_lease(lease, "me", 1, "h", lambda held: False)
    assert not store.try_lease(lease, "you", 2, "h", lambda held: False)
    assert store.try_lease(lease, "you", 2, "h", lambda held: held.owner == "me")  # a stale holder
    assert store.lease_holder(lease).owner == "you"
    store.release_lease(lease, "me")  # not the holder: nothing happens
    assert isinstance(store.lease_holder(lease), LockHolder)
    store.release_lease(lease, "you")
    assert store.lease_holder(lease) is None


def test_memories_are_listed_with_their_size_and_build_cost_and_can_be_deleted(store):
    store.put_document("d", "book.txt", 300, 1500)
    store.open_memory("k1", "d", "readagent", {"preset": "quality"}, "m")
    store.put_items("k1", "page", [(0, {"text": "abc"}), (1, {"text": "defg"})])
    store.add_build_usage("k1", {"calls": 2, "prompt_tokens": 100, "completion_tokens": 10, "seconds": 1.5}, False)
    store.add_build_usage("k1", {"calls": 1, "prompt_tokens": 50, "completion_tokens": 5, "seconds": 0.5}, True)
    store.mark_complete("k1")
    (summary,) = store.list_memories()
    assert (summary.document_name, summary.method, summary.status, summary.items) == ("book.txt", "readagent",
                                                                                   "complete", 2)
    assert summary.bytes == len('{"text":"abc"}') + len('{"text":"defg"}')
    assert summary.build_usage == {"calls": 3, "prompt_tokens": 150, "completion_tokens": 15, "seconds": 2.0,
                                   "attempts": 2, "resumed": True}
    assert store.delete_memory("k1") and not store.delete_memory("k1")
    assert store.list_memories() == [] and store.items("k1", "page") == []


def test_the_llm_cache_can_be_cleared(store):
    from pagemind.llm.base import LLMResponse

    store.put_response("a", LLMResponse("x", 1, 1, 0.1, "m"))
    store.put_response("b", LLMResponse("y", 1, 1, 0.1, "m"))
    assert store.clear_responses() == 2 and store.get_response("a") is None and store.clear_responses() == 0



def test_token_counts_are_kept_per_model_and_prompt_so_a_repeat_counts_nothing(store):
    """A prompt's count is made once per model (issue 48: a cached answer opens no tokenizer); another model, or
    another prompt, is counted; ``cache clear`` forgets the counts with the replies."""
    from pagemind.llm import LLM, ScriptedLLM
    from pagemind.llm.base import LLMRequest
    from pagemind.store import StoreResponseCache

    request = LLMRequest.user("how many words are in this prompt")
    counting = ScriptedLLM(default="x")
    first = LLM(counting, cache=StoreResponseCache(store))
    n = first.prompt_tokens(request)
    assert n == counting.prompt_tokens(request) and first.count_tokens("one two three") == 3

    class Refuses(ScriptedLLM):
        def count_tokens(self, text):
            raise AssertionError(f"counted again: {text!r}")

    again = LLM(Refuses(default="x"), cache=StoreResponseCache(store))
    assert again.prompt_tokens(request) == n and again.count_tokens_many(["one two three"]) == [3]
    other = LLM(Refuses(default="x", model_id="another"), cache=StoreResponseCache(store))
    with pytest.raises(AssertionError, match="counted again"):
        other.count_tokens("one two three")
    with pytest.raises(AssertionError, match="counted again"):
        again.prompt_tokens(LLMRequest.user("a prompt not counted before"))
    assert store.forget_token_counts() == 2 and store.forget_token_counts() == 0


def test_runs_are_found_by_a_prefix_of_their_id_in_the_store(store):
    ann = store.create_user("ann", "h1", 1.0)
    for n, (run_id, user) in enumerate((("run_aa01", None), ("run_aa02", None), ("run_ab03", None),
                                        ("run_aa04", ann), ("run_a%05", None))):
        store.create_run(RunRow(run_id, user, "ask", "full", "doc", {}, "done", float(n)))
    assert [r.id for r in store.list_runs(None, prefix="run_aa")] == ["run_aa02", "run_aa01"]  # newest first
    assert [r.id for r in store.list_runs(None, prefix="run_ab03")] == ["run_ab03"]
    assert [r.id for r in store.list_runs(ann, prefix="run_aa")] == ["run_aa04"]  # another user's are not seen
    assert [r.id for r in store.list_runs(None, prefix="run_a%")] == ["run_a%05"]  # a prefix, not a pattern
    assert [r.id for r in store.list_runs(None, prefix="run_a_0")] == []
    assert len(store.list_runs(None, prefix="run_", limit=2)) == 2


def test_sqlite_archival_search_keeps_vectors_between_searches_and_sees_every_new_passage(tmp_path):
    """The SQLite store ranks an agent's vectors in memory between searches; passages added since (by this
    connection or another process's), of this embedder or another, are found as if every vector were read again."""
    import numpy as np

    from pagemind.store.vectors import rank

    rng = np.random.default_rng(7)

    def rows(n, embedder="e"):
        return [PassageRow(f"p{i}", "t", embedding=rng.standard_normal(8).astype(np.float32).tobytes(),
                           embedder=embedder) for i in range(n)]

    mine, other = Store(tmp_path / "s.db"), Store(tmp_path / "s.db")
    agent = mine.create_agent("ann", {}, {}, 0.0, [])
    query = rng.standard_normal(8).astype(np.float32).tobytes()

    def check(expected_total):
        total, ids = mine.nearest_agent_passages(agent, "e", query, 5)
        assert total == expected_total and ids == rank(mine.agent_passage_vectors(agent, "e"), query, 5)

    assert mine.nearest_agent_passages(agent, "e", query, 5) == (0, [])
    mine.insert_agent_passages(agent, rows(3, "other"))  # no vectors of "e" yet
    check(0)
    mine.insert_agent_passages(agent, rows(40))
    check(40)
    other.insert_agent_passages(agent, rows(7) + rows(2, "other"))  # another connection writes
    check(47)
    reads = []
    mine.db._db.set_trace_callback(reads.append)
    check(47)  # nothing new: no vector is read again
    assert not any(sql.startswith("SELECT id, embedding FROM agent_passages WHERE agent_id = ") and " AND id > "
                   in sql for sql in reads)
    mine.db._db.set_trace_callback(None)
    mine.close(), other.close()


def test_the_vector_cache_reads_only_the_passages_its_stamp_describes():
    """A writer that adds passages between the count and the read must not put them in the cache twice."""
    import numpy as np

    from pagemind.store.vectors import VectorCache

    table = [(i, np.full(4, i, np.float32).tobytes()) for i in range(1, 9)]  # ids 1..8, all with vectors

    def read(after, upto):  # the table already holds rows past upto (added after the count was taken)
        rows = [r for r in table if after < r[0] <= upto]
        return len(rows), rows

    cache = VectorCache()
    ids, _ = cache.matrix((1, "e"), 3, 3, read)
    assert ids.tolist() == [1, 2, 3]
    ids, matrix = cache.matrix((1, "e"), 5, 5, read)
    assert ids.tolist() == [1, 2, 3, 4, 5] and matrix[:, 0].tolist() == [1, 2, 3, 4, 5]
    ids, _ = cache.matrix((1, "e"), 8, 8, read)
    assert ids.tolist() == list(range(1, 9))


def test_listings_are_read_a_page_at_a_time_after_a_cursor(store):
    """Documents newest first (ties by id), libraries by name, runs newest first (ties by insertion): walking pages
    by the last item's id sees every row once, in the listing's order, and never another user's."""
    ann, bob = store.create_user("ann", "h1", 1.0), store.create_user("bob", "h2", 1.0)
    for n in range(7):
        doc_id = f"doc{n}"
        store.put_document(doc_id, f"d{n}.txt", 3, 12)
        store.add_user_document(ann, doc_id, f"d{n}.txt", float(n // 2))  # pairs share a time
        store.add_user_document(bob, doc_id, f"d{n}.txt", 0.0)
        store.create_library(f"u{ann}", f"lib{n}", 1.0)
        store.create_run(RunRow(f"run{n}", ann, "ask", "full", "doc", {}, "done", float(n // 3)))
    store.create_run(RunRow("bobs", bob, "ask", "full", "doc", {}, "done", 9.0))

    def walk(read, cursor):
        seen, after = [], None
        while True:
            page = read(after, 3)
            assert len(page) <= 3
            seen += page
            if len(page) < 3:
                return seen
            after = cursor(page[-1])

    whole = store.user_documents(ann)
    assert [d.created for d in whole] == sorted((d.created for d in whole), reverse=True)
    assert walk(lambda after, n: store.user_documents(ann, after, n), lambda d: d.id) == whole
    assert len(whole) == 7 and store.count_user_documents(ann) == 7
    libraries = walk(lambda after, n: store.libraries(f"u{ann}", after, n), lambda r: r.name)
    assert [r.name for r in libraries] == [f"lib{n}" for n in range(7)]
    runs = walk(lambda after, n: store.list_runs(ann, limit=n, after=after), lambda r: r.id)
    assert [r.id for r in runs] == [r.id for r in store.list_runs(ann, limit=100)]
    assert sorted(r.id for r in runs) == [f"run{n}" for n in range(7)]
