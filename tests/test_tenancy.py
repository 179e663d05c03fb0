"""No side channels across users through a shared text (issue 21, "tenancy"): the store keeps one copy of a text two
users upload, but memories and cached LLM replies are scoped per user, so a user sees only the memories, items, runs
and usage their own requests made, and never another user's cache hit. The local user (the CLI, ``pagemind mcp``,
``serve --auth none``) keeps the memory and cache keys it had before scopes existed."""

from __future__ import annotations

import pytest

from helpers import first_words_gist, make_text, middle_label

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from pagemind import Pagemind, ScriptedLLM  # noqa: E402
from pagemind import users as users_api  # noqa: E402
from pagemind.errors import NotFound  # noqa: E402
from pagemind.llm.base import LLMRequest  # noqa: E402
from pagemind.server.app import create_app  # noqa: E402
from pagemind.store import Store, memory_key, memory_scope  # noqa: E402
from pagemind.text import Document  # noqa: E402
from pg import pg_server, pg_url  # noqa: E402, F401  (fixtures: a real Postgres, a fresh database per test)

QUESTION = "Who finds the map?"
# Computed with pagemind before scopes existed (HEAD 2e2c564): the local user's addresses must stay these.
OLD_MEMORY_KEY = "d84fd58070443949e975d1a9c5278c4b06095de9be2e23179fc614128cd0f8d5"
OLD_CACHE_KEY = "e017e9a4cce58d5c0f82d40e32776325c788c89c003cf46b16f13527785b08c6"


@pytest.fixture
def fake():
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist,
                                "lookup": "I want to look up Page [0] to answer.", "answer": "Answer: the map",
                                "agent-step": "{}"})


@pytest.fixture
def service(tmp_path, fake):
    pm = Pagemind(fake, store=tmp_path / "s.db")
    ann, ann_key = users_api.create_user(pm.store, "ann")
    bob, bob_key = users_api.create_user(pm.store, "bob")
    with TestClient(create_app(pm, auth="keys", workers=2)) as client:
        yield {"client": client, "pm": pm, "fake": fake, "ann": {"Authorization": f"Bearer {ann_key}"},
               "bob": {"Authorization": f"Bearer {bob_key}"}, "ann_id": ann.id, "bob_id": bob.id}
    pm.close()


TEXT = make_text(12, 40)


def upload(s, who, name="story.txt"):
    r = s["client"].post("/v1/documents", headers=s[who], json={"name": name, "text": TEXT})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def ask(s, who, doc_id):
    r = s["client"].post(f"/v1/documents/{doc_id}/ask", headers=s[who],
                         json={"question": QUESTION, "method": "readagent-p"})
    assert r.status_code == 200, r.text
    return r.json()


def keys(s, who, doc_id):
    return [m.key for m in s["pm"].memories(doc_id, user_id=s[f"{who}_id"])]


def test_the_same_text_asked_by_two_users_is_built_and_answered_twice(service):
    s, pm, fake = service, service["pm"], service["fake"]
    doc = upload(s, "ann")
    first = ask(s, "ann", doc)
    ann_calls = len(fake.history)
    assert first["index_usage"]["calls"] > 0 and first["usage"]["calls"] > 0
    (ann_key,) = keys(s, "ann", doc)

    assert upload(s, "bob", name="mine.txt") == doc  # one stored copy of the text, two holders
    assert keys(s, "bob", doc) == []  # bob sees no memory before his own request
    with pytest.raises(NotFound):
        pm.memory(doc, ann_key, user_id=s["bob_id"])

    second = ask(s, "bob", doc)
    assert second["answer"] == first["answer"]
    for usage in (second["usage"], second["index_usage"]):  # built and answered anew: no cache hit is visible
        assert usage["cached_calls"] == 0 and usage["prompt_tokens"] > 0
    assert len(fake.history) == 2 * ann_calls  # the model was really called for bob, as much as for ann
    (bob_key,) = keys(s, "bob", doc)
    assert bob_key != ann_key and keys(s, "ann", doc) == [ann_key]
    assert pm.store.get_memory(bob_key).scope == f"u{s['bob_id']}"
    assert pm.store.get_memory(ann_key).scope == f"u{s['ann_id']}"
    assert pm.store.get_run(second["run_id"]).result["memory"] == bob_key  # his run names his memory
    content = pm.memory(doc, bob_key, user_id=s["bob_id"])
    assert content.memory.key == bob_key and content.items["page"] and content.items["gist"]
    with pytest.raises(NotFound):
        pm.memory(doc, bob_key, user_id=s["ann_id"])
    assert [r.id for r in pm.runs.list(s["bob_id"])] == [second["run_id"]]

    again = ask(s, "bob", doc)  # bob's own cache and memory still serve bob
    assert "index_usage" not in again and again["usage"]["cached_calls"] == again["usage"]["calls"] > 0
    assert len(fake.history) == 2 * ann_calls


def test_the_http_api_shows_a_user_only_their_own_memories(service):
    s, c = service, service["client"]
    doc = upload(s, "ann")
    ask(s, "ann", doc)
    (ann_key,) = keys(s, "ann", doc)
    upload(s, "bob")
    assert c.get(f"/v1/documents/{doc}", headers=s["bob"]).json()["memories"] == []
    assert c.get(f"/v1/documents/{doc}/memories/{ann_key}", headers=s["bob"]).status_code == 404
    ask(s, "bob", doc)
    (bob_key,) = keys(s, "bob", doc)
    assert [m["key"] for m in c.get(f"/v1/documents/{doc}", headers=s["bob"]).json()["memories"]] == [bob_key]
    assert [m["key"] for m in c.get(f"/v1/documents/{doc}", headers=s["ann"]).json()["memories"]] == [ann_key]
    assert c.get(f"/v1/documents/{doc}/memories/{bob_key}", headers=s["bob"]).status_code == 200
    assert c.get(f"/v1/documents/{doc}/memories/{bob_key}", headers=s["ann"]).status_code == 404


def test_erasing_or_removing_takes_only_that_users_memories(service):
    s, pm, c = service, service["pm"], service["client"]
    doc = upload(s, "ann")
    upload(s, "bob")
    ask(s, "ann", doc)
    ask(s, "bob", doc)
    (ann_key,), (bob_key,) = keys(s, "ann", doc), keys(s, "bob", doc)
    archive = c.get("/v1/me/export", headers=s["bob"]).json()
    assert [m["key"] for m in archive["documents"][0]["memories"]] == [bob_key]
    assert archive["documents"][0]["memories"][0]["items"]["gist"]

    erased = c.delete("/v1/me/data", headers=s["bob"]).json()
    assert erased["memories"] == 1 and erased["document_texts"] == 0  # the text stays: ann holds it
    assert pm.store.get_memory(bob_key) is None and pm.store.memory_items(bob_key) == {}
    assert pm.store.get_memory(ann_key).status == "complete" and keys(s, "ann", doc) == [ann_key]

    upload(s, "bob")
    ask(s, "bob", doc)
    (bob_key,) = keys(s, "bob", doc)
    assert c.delete(f"/v1/documents/{doc}", headers=s["bob"]).status_code == 204
    assert pm.store.get_memory(bob_key) is None and keys(s, "ann", doc) == [ann_key]


def test_the_local_user_keeps_the_keys_it_had(tmp_path):
    doc = Document(text=TEXT, name="story.txt")
    settings = {"preset": "quality", "n": 3}
    assert memory_key("d" * 64, "readagent", settings, "scripted") == OLD_MEMORY_KEY
    assert memory_key("d" * 64, "readagent", settings, "scripted", "") == OLD_MEMORY_KEY
    assert memory_key("d" * 64, "readagent", settings, "scripted", "u2") != OLD_MEMORY_KEY
    request = LLMRequest.user(QUESTION, role="answer", max_tokens=64)
    assert request.cache_key("scripted") == request.cache_key("scripted", "") == OLD_CACHE_KEY
    assert request.cache_key("scripted", "u2") != OLD_CACHE_KEY

    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        cli = pm.index(doc, "readagent-p")  # the CLI: no user
        reader = pm.reader("readagent-p")
        assert cli.key == memory_key(doc.id, reader.memory_kind, reader.memory_settings(), "scripted")
        built = len(fake.history)
        local = users_api.local_user(pm.store)  # pagemind mcp and serve --auth none act as this user
        assert pm.scope(None) == pm.scope(local.id) == ""
        assert pm.index(doc, "readagent-p", user_id=local.id).key == cli.key and len(fake.history) == built
        ann, _ = users_api.create_user(pm.store, "ann")
        assert pm.scope(ann.id) == f"u{ann.id}"
        assert pm.index(doc, "readagent-p", user_id=ann.id).key != cli.key and len(fake.history) == 2 * built


def test_a_scoped_client_shares_the_backend_and_usage_but_not_the_cache(tmp_path):
    fake = ScriptedLLM(default="Answer: yes")
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        ann, _ = users_api.create_user(pm.store, "ann")
        request = LLMRequest.user(QUESTION, role="answer")
        pm.llm.complete(request)
        scoped = pm.llm.scoped(pm.scope(ann.id))
        assert scoped.backend is pm.llm.backend and scoped.usage is pm.llm.usage and pm.llm.scope == ""
        _, event = scoped.complete(request)
        assert not event.cached and len(fake.history) == 2 and pm.llm.usage.calls == 2
        assert scoped.complete(request)[1].cached and pm.llm.complete(request)[1].cached
        assert pm.llm.scoped("") is pm.llm
        assert pm.reader("full", user_id=ann.id).scope == f"u{ann.id}" and pm.reader("full").scope == ""
        pm.create_agent("u1.sam", user_id=ann.id)
        assert pm.agent("u1.sam", user_id=ann.id).llm.scope == f"u{ann.id}"  # an agent's turns too


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = Store(tmp_path / "s.db")
    else:
        from pagemind.store.postgres import PostgresStore

        s = PostgresStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


def test_the_store_keeps_each_memorys_scope_and_erases_by_it(store):
    ann, _ = users_api.create_user(store, "ann")
    bob, _ = users_api.create_user(store, "bob")
    local = users_api.local_user(store)
    assert memory_scope(store, None) == memory_scope(store, local.id) == ""
    assert memory_scope(store, bob.id) == f"u{bob.id}"
    store.put_document("d", "book", 3, 11)
    store.put_document_text("d", "a b c")
    for user in (ann, bob):
        store.add_user_document(user.id, "d", "book", 1.0)
    for key, scope in (("cli", ""), ("ka", f"u{ann.id}"), ("kb", f"u{bob.id}"), ("kb2", f"u{bob.id}")):
        assert store.open_memory(key, "d", "rag", {}, "-", scope).scope == scope
        store.put_items(key, "fragment", [(1, {"i": 1}), (0, {"i": 0})])
        store.put_items(key, "page", [(0, {"p": 0})])
    assert [m.key for m in store.memories_for("d", scope=f"u{ann.id}")] == ["ka"]
    assert {m.key for m in store.memories_for("d")} == {"cli", "ka", "kb", "kb2"}  # every scope, as before
    assert store.memory_items("ka") == {"fragment": [{"i": 0}, {"i": 1}], "page": [{"p": 0}]}
    assert {m.scope for m in store.list_memories()} == {"", f"u{ann.id}", f"u{bob.id}"}

    assert store.erase_user_data(bob.id)["memories"] == 2  # his, though ann still holds the text
    assert {m.key for m in store.memories_for("d")} == {"cli", "ka"} and store.memory_items("kb") == {}
    assert store.document_text("d") == "a b c"
    store.add_user_document(bob.id, "d", "book", 2.0)
    store.open_memory("kb", "d", "rag", {}, "-", f"u{bob.id}")
    assert store.remove_user_document(bob.id, "d")  # his memories of it go with his copy
    assert {m.key for m in store.memories_for("d")} == {"cli", "ka"}
    assert store.remove_user_document(ann.id, "d")  # nobody holds it: every memory of it goes
    assert store.memories_for("d") == [] and store.document_text("d") is None
