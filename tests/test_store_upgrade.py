"""Stores written by the release before the one SQL store (tests/data/stores, written by its code) open with
today's code on both databases: the schema is migrated in place, every row is kept, and the store works."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from pagemind.store import PassageRow, Store
from pagemind.store.copy import TABLES
from pagemind.store.schema import MIGRATIONS
from pg import new_database, pg_server  # noqa: F401  (fixtures: a real Postgres)

STORES = Path(__file__).parent / "data" / "stores"
ALL = [m.name for m in MIGRATIONS]


def _check_release_rows(store):
    """What the 0.1.0 store holds, read through today's code."""
    counts = {table: store.count_rows(table) for table, _ in TABLES}
    assert counts == {"documents": 1, "document_texts": 1, "llm_cache": 1, "memories": 2, "memory_items": 3,
                      "embeddings": 1, "users": 1, "api_keys": 2, "user_documents": 1, "agents": 1,
                      "agent_blocks": 2, "agent_messages": 2, "agent_passages": 2, "agent_owners": 1, "runs": 2,
                      "run_steps": 1, "libraries": 0, "library_documents": 0, "file_reads": 0,  # later tables
                      "token_counts": 0, "agent_forgotten": 0,
                      "agent_block_versions": 2}  # the blocks stored before history: their version 1
    agent = store.get_agent("bot")
    assert [(v.label, v.version, v.cause) for v in store.agent_block_versions(agent.id, "human")] == [
        ("human", 1, "stored before history")]
    assert store.get_memory("mem1").status == "complete"
    assert store.memory_items("mem1") == {"gist": [{"text": "g"}], "page": [{"text": "one"}, {"text": "two"}]}
    assert store.get_memory("mem2").scope == "u1"
    assert {m.key: m.build_usage for m in store.list_memories()}["mem1"]["attempts"] == 1
    assert store.get_response("c1").tool_calls[0].name == "send_message"
    user = store.user_for_key("hash2")
    assert user.name == "ann" and [d.name for d in store.user_documents(user.id)] == ["ann's book"]
    agent = store.get_agent("bot")
    assert [b.label for b in store.agent_blocks(agent.id)] == ["persona", "human"]
    assert [e.text for e in store.agent_queue(agent.id)] == ["hello", "hi"]
    assert store.search_agent_passages(agent.id, "FACT")[0] == 2
    assert store.agent_owner(agent.id) == user.id
    assert [r.id for r in store.list_runs(None, all_users=True)] == ["run_local", "run_abc"]
    assert [s.kind for s in store.run_steps("run_abc")] == ["llm"]
    assert store.lease_holder("build:mem2").owner == "owner1"  # leases are kept; the old turn locks table is gone
    # and it works on: new ids follow the old ones, search finds the old embedded passage
    assert store.insert_agent_passages(agent.id, [PassageRow("fact three", "2024-01-03")]) == [3]
    assert store.forget_agent_passage(agent.id, 3, "cli", 9.0).text == "fact three"  # the new table, on an old store
    assert store.restore_agent_passage(agent.id, 3).id == 3
    query = store.agent_passage_vectors(agent.id, "e")[0][1]
    assert store.nearest_agent_passages(agent.id, "e", query, 1) == (1, [1])
    assert store.create_agent("bot2", {}, {}, 9.0, []) == agent.id + 1
    assert store.try_lease(f"agent:{agent.id}", "me", 1, "here", lambda held: False)


def test_a_sqlite_store_of_the_last_release_upgrades_in_place(tmp_path):
    path = tmp_path / "old.sqlite"
    shutil.copy(STORES / "release-0.1.0.sqlite", path)
    store = Store(path)
    assert store.applied_migrations() == ALL  # m009 added after the eight it had
    _check_release_rows(store)
    store.close()
    db = sqlite3.connect(str(path))
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'agent_locks'").fetchone() is None
    db.close()


def test_a_postgres_store_of_the_last_release_upgrades_in_place(pg_server):
    psycopg = pytest.importorskip("psycopg")
    from pagemind.store.postgres import PostgresStore

    url = new_database(pg_server)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((STORES / "release-0.1.0-postgres.sql").read_text(encoding="utf-8"))
        recorded = [r[0] for r in conn.execute("SELECT name FROM public._pagemind_migrations ORDER BY position")]
    assert recorded == ["m001_initial", "m002_service", "m003_leases", "m004_memory_scope"]  # its own history
    store = PostgresStore(url)
    assert store.applied_migrations() == ALL  # renamed to the one list, then m009 applied
    _check_release_rows(store)
    store.close()
    store = PostgresStore(url)  # opening again changes nothing
    assert store.applied_migrations() == ALL
    store.close()
