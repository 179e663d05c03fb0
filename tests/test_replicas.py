"""Two ``pagemind serve`` processes on two loopback ports sharing one Postgres database (issue 17): agents talked to
through both at once, a memory built through one and read through the other, and one replica killed with SIGKILL
mid-turn and mid-build while the other finishes the work. Their LLM is one mock OpenAI-compatible server on loopback
(pagemind.llm.mockserver) with a latency; the tests count its requests by kind, phase by phase. (Both replicas
must name the LLM by the same URL: the model id, part of a memory's key, includes it.)"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from helpers import make_text
from pg import pg_server, pg_url  # noqa: F401

pytest.importorskip("fastapi", reason="the replica tests run pagemind serve (pip install 'pagemind[serve]')")
pytest.importorskip("uvicorn", reason="the replica tests run pagemind serve (pip install 'pagemind[serve]')")
httpx = pytest.importorskip("httpx")

from pagemind import users as users_api  # noqa: E402
from pagemind.llm.llamaserver import free_port, wait_until_answering  # noqa: E402
from pagemind.llm.mockserver import MockServer  # noqa: E402
from pagemind.runs import INTERRUPTED  # noqa: E402
from pagemind.store import open_store  # noqa: E402

AGENT = {"embedder": "none", "tool_calling": "json", "constrained": False}
LLM = ["--llm", "openai:mock", "--context-window", "8192", "--server-kind", "openai", "--no-cache"]
_LABEL = re.compile(r"^<(\d+)>$", re.MULTILINE)


def kind_of(body: dict) -> str:
    head = str(body["messages"][0]["content"])[:300]
    if "You are given a passage" in head:
        return "paginate"
    if "Please shorten" in head:
        return "gist"
    return "other"


def reply(body: dict) -> str:
    """The mock's answer, read from the prompt: ReadAgent's pause point (the middle label) and gist (the first 15% of
    the page's words); an agent step echoes the last user message, or saves it to core memory when it says
    ``remember: ...``; anything else is ``ok``."""
    kind = kind_of(body)
    first = str(body["messages"][0]["content"])
    if kind == "paginate":
        labels = _LABEL.findall(first)
        return f"Break point: <{labels[len(labels) // 2]}>\n Because it is a natural pause." if labels else "ok"
    if kind == "gist":
        words = first.split("Passage:\n", 1)[-1].split()
        return " ".join(words[: max(1, round(len(words) * 0.15))])
    said = [json.loads(line)["message"] for m in body["messages"] for line in str(m.get("content") or "").splitlines()
            if line.startswith("{") and '"user_message"' in line]
    if not said:
        return "ok"
    last = said[-1]
    if last.startswith("remember: ") and not any('"core_memory_append"' in str(m.get("content") or "")
                                                  for m in body["messages"][-3:]):
        return json.dumps({"thoughts": "save it", "function": "core_memory_append",
                           "arguments": {"label": "human", "content": last[10:], "request_heartbeat": False}})
    return json.dumps({"thoughts": "reply", "function": "send_message", "arguments": {"message": f"echo: {last}"}})


def counted(mock: MockServer, kind: str, since: int = 0) -> int:
    return sum(kind_of(body) == kind for body in list(mock.requests)[since:])


class Replica:
    """``pagemind serve`` on its own port, on the shared Postgres store and the shared mock LLM."""

    def __init__(self, store: str, key: str, mock: MockServer) -> None:
        self.mock = mock
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pagemind", "serve", "--port", str(self.port), "--store", store, "--base-url",
             self.mock.url, "--concurrency", "8", "--workers", "8", *LLM],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)

    def ready(self) -> Replica:
        wait_until_answering(f"{self.url}/v1/health", self.process, what="pagemind serve")
        return self

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def close(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def replicas(pg_url):
    """Two replicas (a, b) on one fresh Postgres database, with one user; their LLM answers in 0.05 s."""
    store = open_store(pg_url)
    _, key = users_api.create_user(store, "ann")
    store.close()
    made: list[Replica] = []
    with MockServer(latency=0.05, text=reply) as mock:
        try:
            made.append(Replica(pg_url, key, mock))
            made.append(Replica(pg_url, key, mock))  # both start at once
            yield made[0].ready(), made[1].ready(), pg_url
        finally:
            for replica in made:
                replica.close()


def user_messages(client, agent_id: int) -> list[str]:
    history = client.get(f"/v1/agents/{agent_id}/messages?limit=500").json()["messages"]
    return [m["payload"]["message"] for m in history if m["kind"] == "user_message"]


def test_agents_talked_to_through_both_replicas_at_once(replicas):
    a, b, _ = replicas
    agents = [a.client.post("/v1/agents", json={"name": f"ag{i}", "options": AGENT}).json()["id"] for i in range(4)]
    assert sorted(x["id"] for x in b.client.get("/v1/agents").json()) == sorted(agents)  # one database
    errors: list[str] = []

    def talk(replica: Replica, agent_id: int, tag: str) -> None:  # one client: its messages one after another
        for t in range(3):
            message = f"{agent_id}-{tag}-{t}"
            r = replica.client.post(f"/v1/agents/{agent_id}/messages", json={"message": message})
            if r.status_code != 200 or r.json()["messages"] != [f"echo: {message}"]:
                errors.append(f"{message}: {r.status_code} {r.text[:200]}")

    clients = [threading.Thread(target=talk, args=(replica, agent_id, tag))
               for agent_id in agents for replica, tag in ((a, "a"), (b, "b"))]
    for c in clients:
        c.start()
    for c in clients:
        c.join(120)
    assert errors == []
    for agent_id in agents:
        got = user_messages(b.client, agent_id)
        assert sorted(got) == sorted(f"{agent_id}-{tag}-{t}" for tag in "ab" for t in range(3))  # each once, own only
        for tag in "ab":  # each client's messages in the order it sent them
            assert [m for m in got if m.split("-")[1] == tag] == [f"{agent_id}-{tag}-{t}" for t in range(3)]
        # never two turns at once, across replicas: each message is followed by its own answer, then its result
        history = [e for e in b.client.get(f"/v1/agents/{agent_id}/messages?limit=500").json()["messages"]
                   if not (e["kind"] == "system_alert" and "Recalled from your memory" in e["payload"]["message"])]
        for i, event in enumerate(history):  # (what recall before reply placed after a message aside)
            if event["kind"] == "user_message":
                answer = history[i + 1]
                assert answer["kind"] == "step" and answer["payload"]["arguments"]["message"] == \
                    f"echo: {event['payload']['message']}"
                assert history[i + 2]["kind"] == "function_result"
        runs = a.client.get(f"/v1/runs?kind=turn&target={agent_id}").json()
        assert sorted(r["request"]["message"] for r in runs) == sorted(got)
        assert {r["status"] for r in runs} == {"done"}


def index(replica: Replica, doc_id: str, **params) -> httpx.Response:
    return replica.client.post(f"/v1/documents/{doc_id}/index", json={"method": "readagent-p"}, params=params)


def test_a_memory_built_through_one_replica_is_read_through_the_other(replicas):
    a, b, _ = replicas
    doc = a.client.post("/v1/documents", json={"name": "story.txt", "text": make_text(40, 60)}).json()
    built = index(a, doc["id"])
    assert built.status_code == 200 and built.json()["status"] == "done", built.text
    assert counted(a.mock, "paginate") > 0 and counted(a.mock, "gist") > 0
    key = built.json()["result"]["memory"]
    before = len(b.mock.requests)
    again = index(b, doc["id"])
    assert again.status_code == 200 and again.json()["result"]["memory"] == key
    assert len(b.mock.requests) == before  # found in the store: no LLM call
    asked = b.client.post(f"/v1/documents/{doc['id']}/ask", json={"question": "Who?", "method": "readagent-p"})
    assert asked.status_code == 200, asked.text
    assert counted(b.mock, "paginate", before) == 0 and counted(b.mock, "gist", before) == 0  # nothing built again
    assert len(b.mock.requests) - before >= 1  # the answer's own calls
    roles = {s["data"]["role"] for s in b.client.get(f"/v1/runs/{asked.json()['run_id']}/steps").json()
             if s["kind"] == "llm"}
    assert roles and not roles & {"paginate", "gist"}
    memory = b.client.get(f"/v1/documents/{doc['id']}/memories/{key}").json()
    assert memory["status"] == "complete" and len(memory["items"]["page"]) == len(memory["items"]["gist"]) > 1


def test_a_replica_killed_mid_build_the_other_resumes_it(replicas, tmp_path):
    a, b, url = replicas
    text = make_text(40, 60)
    reference = reference_build(text, tmp_path)  # the same build uninterrupted, elsewhere: its calls and pages
    doc = a.client.post("/v1/documents", json={"name": "story.txt", "text": text}).json()
    a.mock.latency = 0.4  # slow enough to be killed half-way
    run = index(a, doc["id"], wait="false").json()
    store = open_store(url)
    deadline = time.monotonic() + 60
    while not (memories := store.memories_for(doc["id"])) or len(store.items(memories[0].key, "page")) < 2:
        assert time.monotonic() < deadline, "replica a stored no pages"
        time.sleep(0.05)
    a.kill()
    time.sleep(0.3)
    a.mock.latency = 0.05
    before = len(b.mock.requests)  # replica a's requests, the last ones cut off
    key = memories[0].key
    pages_done, gists_done = len(store.items(key, "page")), len(store.items(key, "gist"))
    assert 2 <= pages_done < reference["pages"]  # cut short half-way
    assert b.client.get(f"/v1/runs/{run['id']}").json()["error"] == INTERRUPTED  # not left running
    resumed = index(b, doc["id"])
    assert resumed.status_code == 200 and resumed.json()["result"]["memory"] == key, resumed.text
    # only what was missing: no stored page is paginated again, no stored gist is written again
    assert counted(b.mock, "paginate", before) == reference["paginate"] - pages_done
    assert counted(b.mock, "gist", before) == reference["pages"] - gists_done
    pages = [(p["start"], p["end"]) for p in store.items(key, "page")]
    assert pages == reference["spans"] and len(store.items(key, "gist")) == len(pages)
    store.close()


def reference_build(text: str, tmp_path) -> dict:
    from pagemind import Document, Pagemind

    with MockServer(text=reply) as mock, Pagemind("openai:mock", base_url=mock.url, context_window=8192,
                                                  server_kind="openai", cache=False, concurrency=8,
                                                  store=tmp_path / "reference.db") as pm:
        memory = pm.index(Document.from_text(text, name="story.txt"), "readagent-p")
        return {"paginate": counted(mock, "paginate"), "pages": len(memory.pages),
                "spans": [(p.start, p.end) for p in memory.pages]}


def test_a_replica_killed_mid_turn_the_other_finishes_the_next_turn(replicas):
    import psycopg

    a, b, url = replicas
    agent_id = a.client.post("/v1/agents", json={"name": "sam", "options": AGENT}).json()["id"]
    assert a.client.post(f"/v1/agents/{agent_id}/messages", json={"message": "hello"}).status_code == 200
    # hold the agent's core-memory rows: replica a's core_memory_append (stored before it runs) cannot finish
    holder = psycopg.connect(url)
    holder.execute("SELECT 1 FROM agent_blocks WHERE agent_id = %s FOR UPDATE", (agent_id,))
    sent = threading.Thread(target=lambda: post_quietly(a, agent_id, "remember: Ann likes tea"), daemon=True)
    sent.start()
    deadline = time.monotonic() + 30
    while not any(m["kind"] == "step" and m["payload"].get("function") == "core_memory_append"
                  for m in b.client.get(f"/v1/agents/{agent_id}/messages?limit=500").json()["messages"]):
        assert time.monotonic() < deadline, "replica a never called core_memory_append"
        time.sleep(0.05)
    a.kill()
    holder.rollback()
    holder.close()
    turn = b.client.post(f"/v1/agents/{agent_id}/messages", json={"message": "are you there?"})
    assert turn.status_code == 200 and turn.json()["messages"] == ["echo: are you there?"], turn.text
    history = b.client.get(f"/v1/agents/{agent_id}/messages?limit=500").json()["messages"]
    at = next(i for i, m in enumerate(history) if m["payload"].get("function") == "core_memory_append"
              and m["kind"] == "step")
    closed = history[at + 1]  # the interrupted call, closed as a failed result before the next turn
    assert closed["kind"] == "function_result" and closed["payload"]["status"] == "Failed"
    assert "interrupted" in closed["payload"]["message"]
    assert user_messages(b.client, agent_id) == ["hello", "remember: Ann likes tea", "are you there?"]
    runs = {r["request"]["message"]: r for r in b.client.get(f"/v1/runs?kind=turn&target={agent_id}").json()}
    assert runs["remember: Ann likes tea"]["status"] == "failed"
    assert runs["remember: Ann likes tea"]["error"] == INTERRUPTED
    assert runs["are you there?"]["status"] == "done"
    blocks = {x["label"]: x["value"] for x in b.client.get(f"/v1/agents/{agent_id}/memory/blocks").json()}
    assert "Ann likes tea" not in blocks["human"]  # the killed call's write was never committed


def post_quietly(replica: Replica, agent_id: int, message: str) -> None:
    try:
        replica.client.post(f"/v1/agents/{agent_id}/messages", json={"message": message})
    except httpx.TransportError:
        pass  # the replica was killed under it
