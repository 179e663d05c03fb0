"""``Idempotency-Key`` on ``POST /v1/agents/{id}/messages``: a retried send runs its turn once. A finished attempt
is answered again, a running one is waited for, and after a failed one the next attempt answers the message
without storing it twice. Through the ASGI app on the scripted fake."""

from __future__ import annotations

import json
import threading
from collections import deque

import pytest

from helpers import first_words_gist, middle_label

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from pagemind import Pagemind, ScriptedLLM  # noqa: E402
from pagemind import users as users_api  # noqa: E402
from pagemind.errors import BadRequest  # noqa: E402
from pagemind.server.agents import keyed_run_id  # noqa: E402
from pagemind.server.app import create_app  # noqa: E402


def echo_step(request):
    said = [json.loads(line)["message"] for m in request.messages for line in m.content.splitlines()
            if line.startswith("{") and '"user_message"' in line]
    return json.dumps({"thoughts": "t", "function": "send_message", "arguments": {"message": f"echo: {said[-1]}"}})


@pytest.fixture
def s(tmp_path):
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "agent-step": echo_step})
    pm = Pagemind(fake, store=tmp_path / "s.db")
    ann, key = users_api.create_user(pm.store, "ann")
    with TestClient(create_app(pm, auth="keys", workers=4)) as client:
        auth = {"Authorization": f"Bearer {key}"}
        agent = client.post("/v1/agents", headers=auth, json={"name": "sam", "options": {"embedder": "none"}}).json()
        yield {"c": client, "auth": auth, "fake": fake, "agent": agent["id"], "user": ann.id, "pm": pm}
    pm.close()


def send(s, message, key, **params):
    headers = {**s["auth"], **({"Idempotency-Key": key} if key else {})}
    return s["c"].post(f"/v1/agents/{s['agent']}/messages", headers=headers, json={"message": message}, params=params)


def recall(s):
    rows = s["c"].get(f"/v1/agents/{s['agent']}/messages?limit=500", headers=s["auth"]).json()["messages"]
    return [m["payload"]["message"] for m in rows if m["kind"] == "user_message"]


def turns(s):
    return s["c"].get(f"/v1/runs?kind=turn&target={s['agent']}", headers=s["auth"]).json()


def steps_called(s):
    return sum(1 for call in s["fake"].history if call.role == "agent-step")


def test_a_repeated_send_is_answered_again_without_a_second_turn(s):
    first = send(s, "hello", "k-1")
    assert first.status_code == 200 and first.json()["messages"] == ["echo: hello"]
    assert first.json()["run_id"] == keyed_run_id(s["user"], s["agent"], "k-1", 1)
    calls = steps_called(s)
    again = send(s, "hello", "k-1")
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    assert steps_called(s) == calls and recall(s) == ["hello"] and len(turns(s)) == 1
    assert send(s, "hello", "k-1", wait="false").json()["status"] == "done"  # the run, as 202 would give it
    plain = send(s, "hello", None)  # without a key a send is a new message
    assert plain.status_code == 200 and recall(s) == ["hello", "hello"]


def test_a_key_used_for_another_message_or_malformed_is_422(s):
    assert send(s, "hello", "k-2").status_code == 200
    other = send(s, "something else", "k-2")
    assert other.status_code == 422 and "another message" in other.json()["detail"]
    assert send(s, "x", "has space").status_code == 422
    assert send(s, "x", "k" * 201).status_code == 422
    assert recall(s) == ["hello"]


def test_a_retry_while_the_first_attempt_runs_waits_for_it(s):
    gate, entered = threading.Event(), threading.Event()

    def slow(request):
        entered.set()
        assert gate.wait(20)
        return echo_step(request)

    s["fake"].role_queues["agent-step"] = deque([slow])
    replies = {}
    first = threading.Thread(target=lambda: replies.setdefault("first", send(s, "wait for me", "k-3")))
    first.start()
    assert entered.wait(10)
    second = threading.Thread(target=lambda: replies.setdefault("second", send(s, "wait for me", "k-3")))
    second.start()
    second.join(0.5)
    assert second.is_alive()  # it waits for the running attempt instead of running a turn of its own
    gate.set()
    first.join(20)
    second.join(20)
    assert replies["first"].json() == replies["second"].json()
    assert replies["second"].headers["idempotent-replayed"] == "true"
    assert recall(s) == ["wait for me"] and len(turns(s)) == 1 and steps_called(s) == 1


def test_after_a_failed_attempt_the_retry_answers_the_stored_message_once(s):
    def refuse(request):
        raise BadRequest("the model server refused the request")

    s["fake"].role_queues["agent-step"] = deque([refuse])
    failed = send(s, "are you there?", "k-4")
    assert failed.status_code == 502 and failed.json()["run_id"] == keyed_run_id(s["user"], s["agent"], "k-4", 1)
    assert recall(s) == ["are you there?"]  # stored before the model call failed
    retried = send(s, "are you there?", "k-4")
    assert retried.status_code == 200 and retried.json()["messages"] == ["echo: are you there?"]
    assert retried.json()["run_id"] == keyed_run_id(s["user"], s["agent"], "k-4", 2)
    assert recall(s) == ["are you there?"]  # not stored twice
    assert sorted(r["status"] for r in turns(s)) == ["done", "failed"]
    assert send(s, "are you there?", "k-4").json()["run_id"] == retried.json()["run_id"]  # now replayed
