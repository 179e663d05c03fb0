"""The HTTP API of ``pagemind serve`` through the ASGI app (FastAPI's TestClient), on the scripted fake: documents
and upload errors, ask sync / 202 / SSE (ids, keep-alive, Last-Event-ID resume), runs and cancel, agents with one
turn at a time in arrival order, and tenancy (401 without a key, 404 for another user's ids, export and erase of
one user only)."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from itertools import pairwise

import pytest

from helpers import first_words_gist, make_text, middle_label, sse_events

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from pagemind import Pagemind, ScriptedLLM  # noqa: E402
from pagemind import users as users_api  # noqa: E402
from pagemind.server.app import create_app  # noqa: E402

MAX_BYTES = 20_000


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


class Gate:
    """A reply that waits until the test opens the gate (a long model call), then answers."""

    def __init__(self, reply):
        self.event = threading.Event()
        self.entered = threading.Event()
        self.reply = reply

    def __call__(self, request):
        self.entered.set()
        assert self.event.wait(20), "the test never opened the gate"
        return self.reply(request) if callable(self.reply) else self.reply

    def open(self):
        self.event.set()


def echo_step(request):
    """An agent step that answers the last user message it sees: 'echo: <message>'."""
    text = "\n".join(m.content for m in request.messages)
    said = [json.loads(line)["message"] for line in text.splitlines()
            if line.startswith("{") and '"user_message"' in line]
    return call("send_message", message=f"echo: {said[-1] if said else '?'}")


@pytest.fixture
def fake():
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "answer": "Answer: the map",
                                "agent-step": echo_step, "summarise": "we talked",
                                "consolidate": json.dumps({"summary": "Ann said hello.", "human": ["Name: Ann"],
                                                           "facts": ["The user, Ann, keeps the lighthouse."]})})


@pytest.fixture
def service(tmp_path, fake):
    pm = Pagemind(fake, store=tmp_path / "s.db", max_bytes=MAX_BYTES)
    ann, ann_key = users_api.create_user(pm.store, "ann")
    bob, bob_key = users_api.create_user(pm.store, "bob")
    app = create_app(pm, auth="keys", keepalive=0.2, workers=8)
    with TestClient(app) as client:
        yield {"client": client, "pm": pm, "fake": fake, "ann": {"Authorization": f"Bearer {ann_key}"},
               "bob": {"Authorization": f"Bearer {bob_key}"}, "ann_id": ann.id, "bob_id": bob.id}
    pm.close()


MAP = "\n\nWren found the map in the chest."  # what the scripted answer ("the map") rests on


def upload(s, who="ann", text=None, name="story.txt"):
    text = text if text is not None else make_text(12, 40)
    r = s["client"].post("/v1/documents", headers=s[who], json={"name": name, "text": text})
    assert r.status_code == 201, r.text
    return r.json()


def sse(response):
    """(events as (id, kind, data), keep-alive comments seen) of an event stream."""
    comments = []
    events = list(sse_events(response.iter_lines(), comments.append))
    return events, len(comments)


# --- documents ------------------------------------------------------------------------------------
def test_documents_crud(service):
    c, ann = service["client"], service["ann"]
    doc = upload(service)
    assert doc["name"] == "story.txt" and doc["words"] == 12 * 40
    files = {"file": ("notes.md", b"# Notes\n\nThe keeper lit the lamp at dusk.\n", "text/markdown")}
    second = c.post("/v1/documents", headers=ann, files=files)
    assert second.status_code == 201 and second.json()["name"] == "notes.md"
    listed = c.get("/v1/documents", headers=ann).json()
    assert {d["id"] for d in listed} == {doc["id"], second.json()["id"]}
    got = c.get(f"/v1/documents/{doc['id']}", headers=ann).json()
    assert got["id"] == doc["id"] and got["memories"] == []
    assert c.delete(f"/v1/documents/{doc['id']}", headers=ann).status_code == 204
    assert c.get(f"/v1/documents/{doc['id']}", headers=ann).status_code == 404
    assert c.delete(f"/v1/documents/{doc['id']}", headers=ann).status_code == 404


@pytest.mark.parametrize("content, status, words", [
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, 415, "binary"),
    (b"", 422, "empty"),
    (b"   \n\n ", 422, "empty"),
    (b"caf\xe9 au lait. " * 50, 422, "not valid utf-8"),
    (b"word " * (MAX_BYTES // 5 + 10), 413, "limit"),
])
def test_upload_errors_are_clear(service, content, status, words):
    c = service["client"]
    r = c.post("/v1/documents", headers=service["ann"], files={"file": ("f.txt", content, "text/plain")})
    assert r.status_code == status, r.text
    assert words in r.json()["detail"]
    assert "pagemind-upload" not in r.json()["detail"]  # named by the upload, not the server's temporary file
    assert c.get("/v1/documents", headers=service["ann"]).json() == []  # nothing kept


def test_an_upload_over_the_body_limit_is_refused_before_it_is_read(service):
    c = service["client"]
    limit = c.app.state.service.max_body  # a JSON upload: the JSON body limit
    sent = []

    def body():  # chunked: no Content-Length, so the server counts as it reads
        for _ in range(limit // 65536 + 10):
            sent.append(1)
            yield b"x" * 65536

    r = c.post("/v1/documents", headers={**service["ann"], "Content-Type": "application/json"}, content=body())
    assert r.status_code == 413 and "limit" in r.json()["detail"]
    big = c.post("/v1/documents", headers={**service["ann"], "Content-Type": "application/json",
                                            "Content-Length": str(limit + 1)}, content=b"{}")
    assert big.status_code == 413  # the declared length alone is enough


def test_undecodable_text_is_read_with_the_encoding_given(service):
    c = service["client"]
    files = {"file": ("f.txt", "café au lait. ".encode("latin-1") * 20, "text/plain")}
    r = c.post("/v1/documents", headers=service["ann"], files=files, data={"encoding": "latin-1"})
    assert r.status_code == 201 and r.json()["words"] == 60
    wrong = c.post("/v1/documents", headers=service["ann"], content=b"hello", )
    assert wrong.status_code == 415 and "multipart/form-data" in wrong.json()["detail"]


# --- index and ask --------------------------------------------------------------------------------
def test_ask_sync_and_202(service):
    c, ann = service["client"], service["ann"]
    doc = upload(service, text=make_text(12, 40) + MAP)
    r = c.post(f"/v1/documents/{doc['id']}/ask", headers=ann, json={"question": "Who finds it?", "method": "full"})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["answer"] == "the map" and answer["run_id"].startswith("run_")
    assert answer["support"]["label"] == "supported" and answer["abstained"] is False
    assert answer["support"]["confidence"] >= 0.5 and answer["calibrated"] is True  # shown: the fitted probability
    unsaid = c.post(f"/v1/documents/{upload(service)['id']}/ask", headers=ann,
                    json={"question": "Who finds it?", "method": "full"}).json()  # a text without the map
    assert unsaid["abstained"] is True and unsaid["draft"] == "the map"
    assert unsaid["answer"].startswith("The document does not say") and unsaid["support"]["label"] == "unsupported"
    assert unsaid["confidence"] < answer["confidence"]
    later = c.post(f"/v1/documents/{doc['id']}/ask?wait=false", headers=ann,
                   json={"question": "Who?", "options": ["the map", "a boat"], "method": "full"})
    assert later.status_code == 202 and later.json()["status"] in ("queued", "running", "done")
    run_id = later.json()["id"]
    for _ in range(200):
        run = c.get(f"/v1/runs/{run_id}", headers=ann).json()
        if run["status"] == "done":
            break
        time.sleep(0.02)
    assert run["status"] == "done" and run["request"]["options"] == ["the map", "a boat"]
    assert run["usage"]["calls"] == 1


def test_bad_method_options_are_422_and_create_no_run(service):
    c, ann = service["client"], service["ann"]
    doc = upload(service)
    r = c.post(f"/v1/documents/{doc['id']}/ask", headers=ann,
               json={"question": "q", "method": "full", "method_options": {"walk_depth": 3}})
    assert r.status_code == 422 and "walk_depth" in r.json()["detail"]
    unknown = c.post(f"/v1/documents/{doc['id']}/ask", headers=ann, json={"question": "q", "method": "nope"})
    assert unknown.status_code == 422
    assert c.get("/v1/runs", headers=ann).json() == []


def test_a_reply_the_window_cannot_hold_is_bad_input_not_a_model_failure(service):
    """Found by Schemathesis: gists asked with max_tokens 28,853,719 cannot fit any window; that is the request's
    fault (422, naming the window), not the model server's (502)."""
    c, ann = service["client"], service["ann"]
    doc = upload(service, text=make_text(30, 60))
    r = c.post(f"/v1/documents/{doc['id']}/index", headers=ann,
               json={"method": "gistmem", "options": {"max_tokens": 28_853_719}})
    assert r.status_code == 422, r.text
    assert r.json()["type"] == "ContextWindowExceeded" and "28853719 for the reply" in r.json()["detail"]


def test_index_builds_a_memory_the_document_lists(service):
    c, ann = service["client"], service["ann"]
    doc = upload(service, text=make_text(30, 60))
    r = c.post(f"/v1/documents/{doc['id']}/index", headers=ann, json={"method": "readagent-p"})
    assert r.status_code == 200 and r.json()["status"] == "done", r.text
    memories = c.get(f"/v1/documents/{doc['id']}", headers=ann).json()["memories"]
    assert len(memories) == 1 and memories[0]["status"] == "complete"
    key = r.json()["result"]["memory"]
    assert memories[0]["key"] == key
    items = c.get(f"/v1/documents/{doc['id']}/memories/{key}", headers=ann).json()["items"]
    assert len(items["page"]) == len(items["gist"]) > 1


def test_ask_streams_steps_with_ids_keepalives_and_resumes_from_last_event_id(service):
    c, ann, fake = service["client"], service["ann"], service["fake"]
    gate = Gate("Answer: the map")
    fake.by_role["answer"] = gate
    doc = upload(service, text=make_text(12, 40) + MAP)
    keepalives_before_answer = 0
    with c.stream("POST", f"/v1/documents/{doc['id']}/ask?stream=true", headers=ann,
                  json={"question": "Who?", "method": "full"}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = []

        def kept_alive(_line):
            nonlocal keepalives_before_answer
            keepalives_before_answer += 1
            gate.open()  # the stream stayed alive during the long call: let it finish

        events.extend(sse_events(r.iter_lines(), kept_alive))
    assert keepalives_before_answer >= 1
    ids = [i for i, _, _ in events if i is not None]
    assert ids == sorted(ids) and ids == list(range(len(ids))) and len(ids) >= 3
    kinds = [k for _, k, _ in events]
    assert "llm" in kinds and kinds[-2] == "result" and kinds[-1] == "end"
    run = events[-1][2]
    assert run["status"] == "done" and run["result"]["answer"] == "the map"
    # resume: only the steps after the last one seen, then the end
    with c.stream("GET", f"/v1/runs/{run['id']}/events", headers={**ann, "Last-Event-ID": "1"}) as again:
        resumed, _ = sse(again)
    assert [i for i, _, _ in resumed if i is not None] == ids[2:]
    assert resumed[-1][1] == "end"
    steps = c.get(f"/v1/runs/{run['id']}/steps?after=0", headers=ann).json()
    assert [s["seq"] for s in steps] == ids[1:]


# --- runs -----------------------------------------------------------------------------------------
def test_runs_list_get_steps_and_cancel_a_build_that_resumes_later(service):
    c, ann, fake = service["client"], service["ann"], service["fake"]
    gate = Gate(first_words_gist)
    fake.by_role["gist"] = gate
    doc = upload(service, text=make_text(30, 60))
    started = c.post(f"/v1/documents/{doc['id']}/index?wait=false", headers=ann, json={"method": "readagent-p"})
    assert started.status_code == 202
    run_id = started.json()["id"]
    assert gate.entered.wait(10)
    cancelled = c.post(f"/v1/runs/{run_id}/cancel", headers=ann)
    assert cancelled.status_code == 200 and cancelled.json()["cancel_requested"]
    time.sleep(0.6)  # a run reads its cancel flag at most every 0.5 s
    gate.open()
    for _ in range(300):
        run = c.get(f"/v1/runs/{run_id}", headers=ann).json()
        if run["status"] != "running" and run["status"] != "queued":
            break
        time.sleep(0.02)
    assert run["status"] == "cancelled"
    steps = c.get(f"/v1/runs/{run_id}/steps", headers=ann).json()
    assert steps[-1]["kind"] == "error" and steps[-1]["data"]["type"] == "RunCancelled"
    assert c.get(f"/v1/documents/{doc['id']}", headers=ann).json()["memories"][0]["status"] == "building"
    gists_before = sum(1 for r in fake.history if r.role == "gist")
    again = c.post(f"/v1/documents/{doc['id']}/index", headers=ann, json={"method": "readagent-p"})
    assert again.json()["status"] == "done"
    pages = len(c.get(f"/v1/documents/{doc['id']}/memories/{again.json()['result']['memory']}",
                      headers=ann).json()["items"]["page"])
    assert sum(1 for r in fake.history if r.role == "gist") - gists_before < pages  # resumed, not redone
    listed = c.get("/v1/runs?kind=index", headers=ann).json()
    assert [r["status"] for r in listed] == ["done", "cancelled"]
    assert c.get("/v1/runs?status=cancelled", headers=ann).json()[0]["id"] == run_id
    assert c.post(f"/v1/runs/{run_id}/cancel", headers=ann).json()["status"] == "cancelled"  # ended: unchanged


# --- agents ---------------------------------------------------------------------------------------
def make_agent(s, name="sam", who="ann", **body):
    r = s["client"].post("/v1/agents", headers=s[who], json={"name": name, "options": {"embedder": "none"}, **body})
    assert r.status_code == 201, r.text
    return r.json()


def boundaries(spec):
    """The values just outside ``spec``'s declared bounds (and of the wrong kind), and those on them."""
    bad: list = [[1], {"a": 1}] + (["many"] if spec.type in (int, float) else [])
    bad += [3] if spec.type in (bool, str) else []
    good: list = []
    if spec.choices:
        bad.append("not-" + spec.choices[0])
        good.extend(spec.choices)
    if spec.type is str and spec.maximum is not None:  # a text's bound is its length
        bad.append("x" * (int(spec.maximum) + 1))
        good.append("x" * int(spec.maximum))
        return bad, good
    step = 1 if spec.type is int else 1e-9
    for bound, outside in ((spec.minimum, -step), (spec.maximum, step)):
        if bound is not None:
            bad.append(bound + outside)
            good.append(int(bound) if spec.type is int else bound)
    for bound in (spec.above, spec.below):
        if bound is not None:
            bad.append(bound)
    if not spec.nullable:
        bad.append(None)
    return bad, good


def test_every_agent_option_boundary_is_checked_on_create_and_patch(service):
    """What Schemathesis's coverage phase walked for the agent routes (tests/test_schemathesis.py budgets it away):
    each declared bound of each agent option, on both routes — outside is a 422 naming the option, on it is kept."""
    from pagemind.agent import AgentOptions

    c, ann = service["client"], service["ann"]
    agent = make_agent(service)
    for spec in AgentOptions.specs():
        if spec.name == "embedder":
            continue  # the agent is made without embeddings; "minilm" would load the encoder
        bad, good = boundaries(spec)
        for value in bad:
            made = c.post("/v1/agents", headers=ann, json={"name": "edge", "options": {spec.name: value}})
            patched = c.patch(f"/v1/agents/{agent['id']}", headers=ann, json={"options": {spec.name: value}})
            for r in (made, patched):
                assert r.status_code == 422 and spec.name in r.text, (spec.name, value, r.status_code, r.text)
        for value in good:
            patched = c.patch(f"/v1/agents/{agent['id']}", headers=ann, json={"options": {spec.name: value}})
            assert patched.status_code == 200 and patched.json()["options"][spec.name] == value, (spec.name, value)
    assert [a["name"] for a in c.get("/v1/agents", headers=ann).json()] == ["sam"]  # no refused create was kept


def user_messages(s, agent_id, who="ann"):
    history = s["client"].get(f"/v1/agents/{agent_id}/messages?limit=500", headers=s[who]).json()["messages"]
    return [m["payload"]["message"] for m in history if m["kind"] == "user_message"]


def test_agents_crud_messages_blocks_archival(service):
    c, ann = service["client"], service["ann"]
    agent = make_agent(service, human="Ann likes lighthouses.")
    assert agent["name"] == "sam" and {b["label"] for b in agent["blocks"]} == {"persona", "human"}
    assert "sam" in agent["blocks"][0]["value"]  # the persona uses the shown name, not the stored one
    assert c.post("/v1/agents", headers=ann, json={"name": "sam"}).status_code == 409
    assert c.post("/v1/agents", headers=ann, json={"name": "../x"}).status_code == 422
    assert c.post("/v1/agents", headers=ann, json={"name": "x", "options": {"nope": 1}}).status_code == 422
    assert [a["id"] for a in c.get("/v1/agents", headers=ann).json()] == [agent["id"]]
    hello = "Hello there, I am Ann and I keep the lighthouse"
    turn = c.post(f"/v1/agents/{agent['id']}/messages", headers=ann, json={"message": hello})
    assert turn.status_code == 200, turn.text
    assert turn.json()["messages"] == [f"echo: {hello}"] and turn.json()["run_id"].startswith("run_")
    page = c.get(f"/v1/agents/{agent['id']}/messages?offset=0&limit=2", headers=ann).json()
    assert page["total"] > 2 and len(page["messages"]) == 2 and page["messages"][0]["seq"] < page["messages"][1]["seq"]
    assert user_messages(service, agent["id"]) == [hello]
    put = c.put(f"/v1/agents/{agent['id']}/memory/blocks/human", headers=ann, json={"value": "Ann, keeper."})
    assert put.status_code == 200
    blocks = c.get(f"/v1/agents/{agent['id']}/memory/blocks", headers=ann).json()
    assert {b["label"]: b["value"] for b in blocks}["human"] == "Ann, keeper."
    too_long = c.put(f"/v1/agents/{agent['id']}/memory/blocks/human", headers=ann, json={"value": "x" * 5000})
    assert too_long.status_code == 422 and "limit" in too_long.json()["detail"]
    described = c.put(f"/v1/agents/{agent['id']}/memory/blocks/human", headers=ann,
                      json={"description": "who the user is"})
    assert described.json() == {"label": "human", "value": "Ann, keeper.", "limit": 2000,
                                "description": "who the user is"}
    assert c.put(f"/v1/agents/{agent['id']}/memory/blocks/human", headers=ann, json={}).json() == described.json()
    history = c.get(f"/v1/agents/{agent['id']}/memory/history?label=human", headers=ann).json()["versions"]
    assert [(v["version"], v["cause"]) for v in history] == [(3, "api: ann"), (2, "api: ann"), (1, "create")]
    assert "+Ann, keeper." in history[1]["diff"] and history[0]["diff"] == ""  # v3 changed the description only
    reverted = c.post(f"/v1/agents/{agent['id']}/memory/blocks/human/revert", headers=ann, json={"version": 1})
    assert reverted.json()["value"] == "Ann likes lighthouses." and reverted.json()["version"] == 4
    assert c.get(f"/v1/agents/{agent['id']}/memory/blocks/human/versions/2", headers=ann).json()["value"] == \
        "Ann, keeper."
    assert c.get(f"/v1/agents/{agent['id']}/memory/blocks/human/versions/9", headers=ann).status_code == 404
    assert c.put(f"/v1/agents/{agent['id']}/memory/blocks/human", headers=ann,
                 json={"value": "Ann, keeper."}).status_code == 200
    for text in ("the lamp is lit at dusk", "the boat comes on Tuesdays", "gulls nest on the rock"):
        assert c.post(f"/v1/agents/{agent['id']}/archival", headers=ann, json={"text": text}).status_code == 201
    again = c.post(f"/v1/agents/{agent['id']}/archival", headers=ann, json={"text": "the lamp is lit at dusk"})
    assert again.status_code == 200 and again.json()["stored"] is False and again.json()["ids"] == []
    assert again.json()["passage"]["repeats"][0]["source"] == "api"  # a repeat is recorded, not stored again
    audit = c.post(f"/v1/agents/{agent['id']}/memory/audit", headers=ann, json={}).json()
    assert (audit["total"], audit["repeats"], audit["junk"], audit["folded"]) == (3, 0, [], 0)
    everything = c.get(f"/v1/agents/{agent['id']}/archival?limit=2", headers=ann).json()
    assert everything["total"] == 3 and len(everything["passages"]) == 2
    # by cursor: the page's `next` gives the rest, reading no more than a page; the last page's next is null
    rest = c.get(f"/v1/agents/{agent['id']}/archival?limit=2&after={everything['next']}", headers=ann).json()
    assert [p["text"] for p in rest["passages"]] == ["gulls nest on the rock"] and rest["next"] is None
    first = c.get(f"/v1/agents/{agent['id']}/archival?limit=1&after=0", headers=ann).json()
    assert first["passages"] == everything["passages"][:1] and first["next"] == everything["passages"][0]["id"]
    found = c.get(f"/v1/agents/{agent['id']}/archival?query=boat", headers=ann).json()
    assert found["passages"][0]["text"] == "the boat comes on Tuesdays"
    doc = upload(service, text=make_text(10, 100))
    loaded = c.post(f"/v1/agents/{agent['id']}/documents", headers=ann, json={"document_id": doc["id"], "words": 300})
    assert loaded.status_code == 201 and loaded.json()["passages"] == 4
    patched = c.patch(f"/v1/agents/{agent['id']}", headers=ann, json={"options": {"max_steps": 3}})
    assert patched.json()["options"]["max_steps"] == 3 and patched.json()["counts"]["archival"] == 7
    assert c.patch(f"/v1/agents/{agent['id']}", headers=ann, json={"options": {"nope": 1}}).status_code == 422
    tidied = c.post(f"/v1/agents/{agent['id']}/memory/consolidate", headers=ann)  # issue 39: between sessions
    assert tidied.status_code == 200 and tidied.json()["messages"] == 2 and len(tidied.json()["stored"]) == 2
    assert tidied.json()["versions"] == [["human", 6]]
    assert c.get(f"/v1/agents/{agent['id']}/memory/history?label=human", headers=ann).json()["versions"][0][
        "cause"].startswith("consolidation (messages")
    assert c.post(f"/v1/agents/{agent['id']}/memory/consolidate", headers=ann).json()["messages"] == 0
    assert c.delete(f"/v1/agents/{agent['id']}", headers=ann).status_code == 204
    assert c.get(f"/v1/agents/{agent['id']}", headers=ann).status_code == 404


def test_sends_to_one_agent_run_one_at_a_time_in_arrival_order(service):
    c, ann, fake = service["client"], service["ann"], service["fake"]
    agent = make_agent(service)
    gate = Gate(echo_step)
    fake.role_queues["agent-step"] = deque([gate])  # the first turn's step waits; the others answer at once
    replies: dict[int, dict] = {}

    def send(i):
        replies[i] = c.post(f"/v1/agents/{agent['id']}/messages", headers=ann, json={"message": f"m{i}"}).json()

    threads = []
    for i in range(5):
        threads.append(threading.Thread(target=send, args=(i,)))
        threads[-1].start()
        for _ in range(500):  # each send is queued before the next is made, so the arrival order is known
            if len(c.get("/v1/runs?kind=turn", headers=ann).json()) == i + 1:
                break
            time.sleep(0.01)
        if i == 0:
            assert gate.entered.wait(10)
    busy = c.post(f"/v1/agents/{agent['id']}/messages?wait=false", headers=ann, json={"message": "now?"})
    running = c.get("/v1/runs?kind=turn&status=running", headers=ann).json()
    assert busy.status_code == 409 and [r["id"] for r in running] == [busy.json()["run_id"]]
    assert running[0]["request"]["message"] == "m0"
    assert len(c.get("/v1/runs?kind=turn&status=queued", headers=ann).json()) == 4
    gate.open()
    for t in threads:
        t.join(20)
    assert [replies[i]["messages"] for i in range(5)] == [[f"echo: m{i}"] for i in range(5)]
    assert user_messages(service, agent["id"]) == [f"m{i}" for i in range(5)]
    runs = sorted(c.get("/v1/runs?kind=turn", headers=ann).json(), key=lambda r: r["started"])
    assert [r["request"]["message"] for r in runs] == [f"m{i}" for i in range(5)]
    assert all(a["finished"] <= b["started"] for a, b in pairwise(runs))  # never two at once
    idle = c.post(f"/v1/agents/{agent['id']}/messages?wait=false", headers=ann, json={"message": "later"})
    assert idle.status_code == 202 and idle.json()["kind"] == "turn"


def test_concurrent_sends_to_several_agents_lose_cross_and_duplicate_nothing(service):
    c, ann = service["client"], service["ann"]
    agents = [make_agent(service, name=f"a{k}") for k in range(3)]
    errors = []

    def send(agent, i):
        r = c.post(f"/v1/agents/{agent['id']}/messages", headers=ann, json={"message": f"{agent['name']}-{i}"})
        if r.status_code != 200 or r.json()["messages"] != [f"echo: {agent['name']}-{i}"]:
            errors.append(r.text)

    threads = [threading.Thread(target=send, args=(a, i)) for i in range(4) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    for a in agents:
        got = user_messages(service, a["id"])
        assert sorted(got) == [f"{a['name']}-{i}" for i in range(4)]  # exactly its own, once each
        runs = sorted(c.get(f"/v1/runs?kind=turn&target={a['id']}", headers=ann).json(), key=lambda r: r["started"])
        assert [r["request"]["message"] for r in runs] == got  # recall order = turn order
        assert all(x["finished"] <= y["started"] for x, y in pairwise(runs))


def test_a_turn_streams_its_steps(service):
    c, ann = service["client"], service["ann"]
    agent = make_agent(service)
    with c.stream("POST", f"/v1/agents/{agent['id']}/messages?stream=true", headers=ann,
                  json={"message": "hi"}) as r:
        events, _ = sse(r)
    kinds = [k for _, k, _ in events]
    assert "step" in kinds and "llm" in kinds and kinds[-1] == "end"
    step = next(d for _, k, d in events if k == "step")
    assert step["data"]["function"] == "send_message" and step["data"]["arguments"]["message"] == "echo: hi"


# --- security -------------------------------------------------------------------------------------
def test_a_missing_or_wrong_key_is_401(service):
    c = service["client"]
    for headers in ({}, {"Authorization": "Bearer pm_wrong"}, {"Authorization": "Basic abc"}):
        r = c.get("/v1/documents", headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == 'Bearer realm="pagemind"'
    assert c.get("/v1/health").json()["auth"] == "keys"
    assert c.get("/v1/me", headers=service["ann"]).json()["name"] == "ann"


def test_another_users_ids_are_404(service):
    c, ann, bob = service["client"], service["ann"], service["bob"]
    doc = upload(service)
    agent = make_agent(service)
    run_id = c.post(f"/v1/documents/{doc['id']}/ask", headers=ann,
                    json={"question": "q", "method": "full"}).json()["run_id"]
    for method, url, body in [
        ("GET", f"/v1/documents/{doc['id']}", None), ("DELETE", f"/v1/documents/{doc['id']}", None),
        ("POST", f"/v1/documents/{doc['id']}/ask", {"question": "q", "method": "full"}),
        ("POST", f"/v1/documents/{doc['id']}/index", {"method": "full"}),
        ("GET", f"/v1/agents/{agent['id']}", None), ("DELETE", f"/v1/agents/{agent['id']}", None),
        ("POST", f"/v1/agents/{agent['id']}/messages", {"message": "hi"}),
        ("GET", f"/v1/agents/{agent['id']}/messages", None), ("GET", f"/v1/agents/{agent['id']}/memory/blocks", None),
        ("PUT", f"/v1/agents/{agent['id']}/memory/blocks/human", {"value": "pwned"}),
        ("GET", f"/v1/agents/{agent['id']}/memory/history", None),
        ("POST", f"/v1/agents/{agent['id']}/memory/audit", {"fold": True}),
        ("POST", f"/v1/agents/{agent['id']}/memory/consolidate", None),
        ("GET", f"/v1/agents/{agent['id']}/memory/blocks/human/versions/1", None),
        ("POST", f"/v1/agents/{agent['id']}/memory/blocks/human/revert", {"version": 1}),
        ("GET", f"/v1/agents/{agent['id']}/archival", None),
        ("POST", f"/v1/agents/{agent['id']}/documents", {"document_id": doc["id"]}),
        ("GET", f"/v1/runs/{run_id}", None), ("GET", f"/v1/runs/{run_id}/steps", None),
        ("GET", f"/v1/runs/{run_id}/events", None), ("POST", f"/v1/runs/{run_id}/cancel", None),
    ]:
        r = c.request(method, url, headers=bob, json=body)
        assert r.status_code == 404, (method, url, r.status_code)
    assert c.get("/v1/runs", headers=bob).json() == [] and c.get("/v1/agents", headers=bob).json() == []
    assert c.get(f"/v1/documents/{doc['id']}", headers=ann).status_code == 200  # still ann's, unchanged
    assert {b["label"]: b["value"] for b in c.get(f"/v1/agents/{agent['id']}/memory/blocks",
                                                   headers=ann).json()}["human"] == ""


def test_export_and_erase_touch_only_that_user(service):
    c, ann, bob = service["client"], service["ann"], service["bob"]
    shared = make_text(8, 30)
    upload(service, "ann", text=shared)
    upload(service, "bob", text=shared, name="bobs.txt")  # the same text: one stored copy, two holders
    mine = upload(service, "bob", text=make_text(5, 20), name="mine.txt")
    make_agent(service, who="ann")
    make_agent(service, name="bobby", who="bob")
    c.post(f"/v1/documents/{mine['id']}/ask", headers=bob, json={"question": "q", "method": "full"})
    archive = c.get("/v1/me/export", headers=ann).json()
    assert [d["name"] for d in archive["documents"]] == ["story.txt"] and archive["documents"][0]["text"] == shared
    assert [a["name"] for a in archive["agents"]] == [f"u{service['ann_id']}.sam"] and archive["runs"] == []
    erased = c.delete("/v1/me/data", headers=ann).json()
    assert erased["documents"] == 1 and erased["agents"] == 1 and erased["document_texts"] == 0
    assert c.get("/v1/documents", headers=ann).json() == [] and c.get("/v1/agents", headers=ann).json() == []
    assert {d["name"] for d in c.get("/v1/documents", headers=bob).json()} == {"bobs.txt", "mine.txt"}
    assert [a["name"] for a in c.get("/v1/agents", headers=bob).json()] == ["bobby"]
    assert len(c.get("/v1/runs", headers=bob).json()) == 1
    assert c.get(f"/v1/documents/{mine['id']}", headers=bob).status_code == 200


def test_auth_none_acts_as_the_local_user(tmp_path, fake):
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        with TestClient(create_app(pm, auth="auto")) as c:
            assert c.get("/v1/health").json()["auth"] == "none"
            assert c.get("/v1/me").json()["name"] == "local"
            assert c.post("/v1/documents", json={"name": "a.txt", "text": "the lamp at dusk"}).status_code == 201
        users_api.create_user(pm.store, "ann")
        with TestClient(create_app(pm, auth="auto")) as c:
            assert c.get("/v1/health").json()["auth"] == "keys"
            assert c.get("/v1/documents").status_code == 401


def test_methods_and_models(service):
    c, ann = service["client"], service["ann"]
    methods = {m["name"]: m for m in c.get("/v1/methods").json()}
    assert {"readagent-p", "memwalker", "full", "auto"} <= set(methods)
    assert methods["memwalker"]["schema"]["type"] == "object" and methods["memwalker"]["schema"]["properties"]
    model = c.get("/v1/models", headers=ann).json()
    assert model["model"] == "scripted" and model["capabilities"]["context_window"] == 32768


# --- libraries ------------------------------------------------------------------------------------
def test_libraries_over_http_add_ask_cite_and_remove_per_user(service):
    c, ann, bob = service["client"], service["ann"], service["bob"]
    plain = make_text(12, 40)
    story = plain.replace("p0w0 ", "Wren found the map in the sea chest. ", 1)
    r = c.post("/v1/libraries/shelf/documents", headers=ann, json={"name": "plain.txt", "text": plain})
    assert r.status_code == 201 and r.json()["document"]["status"] == "added", r.text
    files = {"file": ("story.md", story.encode(), "text/markdown")}
    assert c.post("/v1/libraries/shelf/documents", headers=ann, files=files).status_code == 201
    listed = c.get("/v1/libraries", headers=ann).json()
    assert [(x["name"], x["document_count"]) for x in listed] == [("shelf", 2)]
    got = c.get("/v1/libraries/shelf", headers=ann).json()
    assert [d["name"] for d in got["documents"]] == ["plain.txt", "story.md"]
    assert c.get("/v1/libraries", headers=bob).json() == []  # another user's library is not there
    assert c.get("/v1/libraries/shelf", headers=bob).status_code == 404
    assert c.post("/v1/libraries/shelf/ask", headers=bob, json={"question": "Who?"}).status_code == 404
    r = c.post("/v1/libraries/shelf/ask", headers=ann, json={"question": "Who found the map?", "method": "rag",
                                                             "method_options": {"fragment_words": 100}})
    assert r.status_code == 200, r.text
    answer = r.json()
    first = answer["citations"][0]
    assert first["document_name"] == "story.md" and first["quote"] == "Wren found the map in the sea chest."
    opened = c.get(f"/v1/runs/{answer['run_id']}/citations/1", headers=ann).json()
    assert "<cite n=\"1\">Wren found the map in the sea chest.</cite>" in opened["marked"]
    assert c.get(f"/v1/runs/{answer['run_id']}/citations/1", headers=bob).status_code == 404
    assert c.delete("/v1/libraries/shelf/documents/story.md", headers=bob).status_code == 404
    assert c.delete("/v1/libraries/shelf/documents/story.md", headers=ann).status_code == 204
    assert [d["name"] for d in c.get("/v1/libraries/shelf", headers=ann).json()["documents"]] == ["plain.txt"]
    assert c.delete("/v1/libraries/shelf", headers=ann).status_code == 204
    assert c.get("/v1/libraries", headers=ann).json() == []
    assert c.post("/v1/libraries/a%2Fb/documents", headers=ann, json={"name": "x", "text": plain}).status_code in \
        (404, 422)


def test_a_memory_s_structure_and_units_and_a_core_memory_edit_over_http(service):
    c, ann, bob = service["client"], service["ann"], service["bob"]
    doc = upload(service)
    assert c.get(f"/v1/documents/{doc['id']}/structure?method=gistmem", headers=ann).status_code == 404  # not built
    assert c.post(f"/v1/documents/{doc['id']}/ask", headers=ann, json={"question": "Who?", "method": "gistmem"}
                  ).status_code == 200
    shape = c.get(f"/v1/documents/{doc['id']}/structure?method=gistmem", headers=ann).json()
    assert shape["method"] == "readagent" and len(shape["pages"]) >= 2 and all(p["gist"] for p in shape["pages"])
    units = c.get(f"/v1/documents/{doc['id']}/units?pages=0-1&method=readagent-p", headers=ann).json()["units"]
    assert [u["index"] for u in units] == [0, 1] and units[0]["text"].startswith("p0w0 p0w1")
    assert c.get(f"/v1/documents/{doc['id']}/units?pages=0-1", headers=bob).status_code == 404  # not bob's
    assert c.get(f"/v1/documents/{doc['id']}/units?pages=x", headers=ann).status_code == 422
    assert c.get(f"/v1/documents/{doc['id']}/units?pages=40", headers=ann).status_code == 404
    agent = c.post("/v1/agents", headers=ann, json={"name": "sam", "human": "Name: Ann",
                                                    "options": {"embedder": "none"}}).json()
    url = f"/v1/agents/{agent['id']}/memory/blocks/human/edit"
    assert c.post(url, headers=ann, json={"append": "Likes tea"}).json()["value"] == "Name: Ann\nLikes tea"
    swapped = c.post(url, headers=ann, json={"old_content": "tea", "new_content": "coffee"}).json()
    assert swapped["value"] == "Name: Ann\nLikes coffee"
    assert c.post(url, headers=ann, json={"old_content": "cocoa", "new_content": "x"}).status_code == 422
    assert c.post(url, headers=ann, json={}).status_code == 422
    assert c.post(url, headers=bob, json={"append": "x"}).status_code == 404


def test_loading_a_document_that_is_not_yours_is_bad_input_not_a_missing_agent(service):
    c, ann = service["client"], service["ann"]
    agent = make_agent(service)
    bobs = upload(service, "bob", text=make_text(4, 20), name="bobs.txt")
    for document_id in (bobs["id"], "0" * 64):  # another user's, and none at all: the same answer
        r = c.post(f"/v1/agents/{agent['id']}/documents", headers=ann, json={"document_id": document_id})
        assert r.status_code == 422 and r.json()["detail"] == f"no document {document_id!r} of yours to load " \
                                                             "(list your documents)"
    assert c.get(f"/v1/agents/{agent['id']}", headers=ann).status_code == 200  # the agent was there all along


def test_an_agents_line_is_free_before_its_waiter_hears_the_answer():
    """A client that sends its next request (a delete) the moment its edit is answered finds the agent free: the
    line is cleared before the job's future is resolved, never after (that race answered 409 now and then)."""
    from pagemind.server.workers import Workers

    workers = Workers(runs=None, size=2)  # type: ignore[arg-type]  # jobs without runs never reach it
    try:
        for n in range(50):
            heard: list[tuple[bool, str | None]] = []
            _, future = workers.enqueue(n, lambda: (None, lambda: "done"))
            future.add_done_callback(lambda f: heard.append(workers.busy(n)))  # noqa: B023  # called before n moves
            assert future.result(10) == "done"
            deadline = time.time() + 5
            while not heard and time.time() < deadline:
                time.sleep(0.01)
            assert heard == [(False, None)], n
        _, first = workers.enqueue(99, lambda: (None, lambda: time.sleep(0.2) or 1))
        _, second = workers.enqueue(99, lambda: (None, lambda: 2))  # a line of two still runs in order, once each
        assert (first.result(10), second.result(10)) == (1, 2) and workers.busy(99) == (False, None)
    finally:
        workers.shutdown()


def test_a_passage_is_forgotten_and_restored_over_http_and_letta_and_never_by_another_user(service, tmp_path):
    """Issue 50: DELETE /v1/agents/{id}/archival/{n} forgets a passage (gone from listing and search, kept apart with
    who and when), POST …/restore gives it back under its own id; Letta's passage delete forgets the same way; another
    user's delete of it is a 404 that changes nothing."""
    c, ann, bob = service["client"], service["ann"], service["bob"]
    agent = make_agent(service)
    base = f"/v1/agents/{agent['id']}/archival"
    for text in ("The boat comes on Tuesdays.", "The user lives in York.", "The ferry is red."):
        assert c.post(base, headers=ann, json={"text": text}).status_code == 201
    assert c.delete(f"{base}/2", headers=bob).status_code == 404  # another user's agent: as if it did not exist
    gone = c.delete(f"{base}/2", headers=ann)
    assert gone.status_code == 200 and gone.json()["text"] == "The user lives in York."
    listed = c.get(base, headers=ann).json()
    assert listed["total"] == 2 and [p["id"] for p in listed["passages"]] == [1, 3]
    assert "York" not in c.get(base, headers=ann, params={"query": "York"}).text
    assert c.delete(f"{base}/2", headers=ann).status_code == 404  # nothing left to forget
    back = c.post(f"{base}/2/restore", headers=ann)
    assert back.status_code == 200 and back.json()["id"] == 2 and c.get(base, headers=ann).json()["total"] == 3
    assert c.post(f"{base}/2/restore", headers=ann).status_code == 404
    letta = c.delete(f"/letta/v1/agents/agent-{agent['id']}/archival-memory/passage-3", headers=ann)
    assert letta.status_code == 200 and letta.json()["id"] == "passage-3"
    kept = service["pm"].agent(f"u{service['ann_id']}.sam", llm=False).forgotten()
    assert [(i, cause) for i, _, cause, _ in kept] == [(3, "letta: ann")]
    assert c.delete(f"/letta/v1/agents/agent-{agent['id']}/archival-memory/passage-x", headers=ann).status_code == 404


def test_every_listing_is_sent_a_page_at_a_time_with_the_next_page_linked(service):
    """2,000 documents listed in pages of at most 1,000 (100 unless asked), each page's Link header naming the
    next; agents as summaries; /v1/models with has_more; a cursor that is not the user's is refused."""
    s, pm = service, service["pm"]
    for n in range(2000):
        pm.store.put_document(f"doc{n:04d}", f"d{n}.txt", 3, 12)
        pm.store.add_user_document(s["ann_id"], f"doc{n:04d}", f"d{n}.txt", float(n))
    client = s["client"]
    first = client.get("/v1/documents", headers=s["ann"])
    assert first.status_code == 200 and len(first.json()) == 100 and first.json()[0]["id"] == "doc1999"
    seen, url = [], "/v1/documents?limit=1000"
    while url:
        page = client.get(url, headers=s["ann"])
        assert page.status_code == 200 and len(page.json()) <= 1000
        seen += [d["id"] for d in page.json()]
        url = page.links.get("next", {}).get("url")
    assert seen == [f"doc{n:04d}" for n in reversed(range(2000))]
    assert client.get("/v1/documents?limit=1001", headers=s["ann"]).status_code == 422
    assert client.get("/v1/documents", headers=s["bob"]).json() == []
    refused = client.get("/v1/documents?after=doc0001", headers=s["bob"])  # ann's document is no cursor of bob's
    assert refused.status_code == 404 and "no document 'doc0001'" in refused.json()["detail"]

    for name in ("sam", "tom", "una"):
        make_agent(s, name)
        added = client.post(f"/v1/libraries/{name}-shelf/documents", headers=s["ann"],
                            json={"name": "n.txt", "text": "Wren found the map."})
        assert added.status_code == 201, added.text
    agents = client.get("/v1/agents?limit=2", headers=s["ann"])
    assert [a["name"] for a in agents.json()] == ["sam", "tom"] and "blocks" not in agents.json()[0]
    assert agents.json()[0]["counts"]["recall"] >= 0
    rest = client.get(agents.links["next"]["url"], headers=s["ann"])
    assert [a["name"] for a in rest.json()] == ["una"] and "next" not in rest.links
    libraries = client.get("/v1/libraries?limit=2", headers=s["ann"])
    assert [x["name"] for x in libraries.json()] == ["sam-shelf", "tom-shelf"]
    assert [x["name"] for x in client.get(libraries.links["next"]["url"], headers=s["ann"]).json()] == ["una-shelf"]
    every = client.get("/v1/models", headers=s["ann"]).json()
    ids = [m["id"] for m in every["data"]]
    assert ids[-3:] == ["agent/sam", "agent/tom", "agent/una"] and not every["has_more"]
    assert "pagemind/auto@tom-shelf" in ids
    head = client.get("/v1/models?limit=2", headers=s["ann"]).json()
    assert head["has_more"] and [m["id"] for m in head["data"]] == ids[:2] and head["last_id"] == ids[1]
    after = client.get(f"/v1/models?after={head['last_id']}&limit=1000", headers=s["ann"]).json()
    assert [m["id"] for m in after["data"]] == ids[2:]
    assert client.get("/v1/models/agent/una", headers=s["ann"]).status_code == 200
    assert client.get("/v1/models/agent/una", headers=s["bob"]).status_code == 404


def test_an_idle_agent_is_consolidated_in_the_background_once_as_its_owners_run(tmp_path, fake):
    """Issue 50 item 3: `pagemind serve` looks for agents due a pass (their consolidate_idle minutes without a new
    message) and runs one pass each, recorded as the owner's run; not again until something new is said; a pass
    whose lease another replica holds is skipped, recording nothing."""
    import os
    from datetime import datetime, timedelta

    from pagemind.agent.idle import lease_name
    from pagemind.processes import HOST

    pm = Pagemind(fake, store=tmp_path / "s.db", max_bytes=MAX_BYTES)
    _, key = users_api.create_user(pm.store, "ann")
    ann = {"Authorization": f"Bearer {key}"}
    app = create_app(pm, auth="keys", keepalive=0.2, workers=4, consolidate_every=0.05)
    with TestClient(app) as client:
        made = client.post("/v1/agents", headers=ann, json={"name": "sam", "options": {
            "embedder": "none", "consolidate_idle": 1}})
        assert made.status_code == 201 and made.json()["options"]["consolidate_idle"] == 1
        agent_id = made.json()["id"]
        said = client.post(f"/v1/agents/{agent_id}/messages", headers=ann,
                           json={"message": "Hi, I am Ann and I keep the lighthouse."})
        assert said.status_code == 200, said.text

        def passes():
            return client.get("/v1/runs?kind=consolidate", headers=ann).json()

        time.sleep(0.5)  # ten looks: the message is seconds old, not a minute
        assert passes() == []
        old = (datetime.now() - timedelta(minutes=5)).strftime("%Y-%m-%d %H:%M:%S")
        pm.store.execute("UPDATE agent_messages SET created = ? WHERE agent_id = ?", (old, agent_id))
        deadline = time.monotonic() + 30
        while not (found := passes()) and time.monotonic() < deadline:
            time.sleep(0.05)
        (run,) = found
        deadline = time.monotonic() + 30
        while (run := client.get(f"/v1/runs/{run['id']}", headers=ann).json())["status"] != "done" \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert run["status"] == "done" and run["request"]["agent"] == "sam", run
        assert run["result"]["messages"] >= 2 and run["result"]["stored"], run["result"]
        archival = client.get(f"/v1/agents/{agent_id}/archival", headers=ann).json()["passages"]
        assert "The user, Ann, keeps the lighthouse." in [p["text"] for p in archival]
        time.sleep(0.5)
        assert len(passes()) == 1  # nothing new was said: no second pass

        # another replica holds this agent's pass: this one skips it and records nothing
        assert pm.store.try_lease(lease_name(agent_id), "other-replica", os.getpid(), HOST, lambda h: False)
        pm.store.execute("UPDATE agent_messages SET created = ? WHERE agent_id = ?", (old, agent_id))
        service = app.state.service
        service.tried.clear()
        client.post(f"/v1/agents/{agent_id}/messages", headers=ann, json={"message": "I moved to Leeds."})
        pm.store.execute("UPDATE agent_messages SET created = ? WHERE agent_id = ?", (old, agent_id))
        skipped = [f.result(timeout=30) for f in service.consolidate_idle(datetime.now())]
        assert all(done is None for done in skipped)  # tried here or by the background look: skipped
        newest = pm.store.recent_agent_events(agent_id, 1)[0].seq
        assert service.tried[agent_id] == newest and len(passes()) == 1
    pm.close()


def test_an_agents_history_is_paged_by_cursor(service):
    """Issue 49: an agent's messages come a page at a time by their seq (``after`` = the page's ``next``), as well
    as by offset: walking the cursor sees every message once, in order."""
    s = service
    agent = make_agent(s, "ivy")
    for n in range(3):
        assert s["client"].post(f"/v1/agents/{agent['id']}/messages", headers=s["ann"],
                                json={"message": f"note {n}"}).status_code == 200
    url = f"/v1/agents/{agent['id']}/messages"
    whole = s["client"].get(url + "?limit=1000", headers=s["ann"]).json()
    assert whole["next"] is None and len(whole["messages"]) == whole["total"] > 6
    seen, after = [], None
    while True:
        page = s["client"].get(url + "?limit=4" + (f"&after={after}" if after is not None else ""),
                               headers=s["ann"]).json()
        seen += [m["seq"] for m in page["messages"]]
        if page["next"] is None:
            break
        after = page["next"]
    assert seen == [m["seq"] for m in whole["messages"]]
    assert s["client"].get(url + "?after=0", headers=s["bob"]).status_code == 404  # not bob's agent
