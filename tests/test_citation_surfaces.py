"""Citations on the service's surfaces: answers and turn results carry them, ``GET /v1/runs/{id}/citations/{n}`` and
the MCP tool ``get_page`` open one in its place (the text around it, the cited spans as offsets and marked), with the
tenancy rules of every run route; an agent's turn cites the archival passage its answer used."""

from __future__ import annotations

import json

import anyio
import pytest

from pagemind import Pagemind, ScriptedLLM
from pagemind import users as users_api
from pagemind.citations import cite

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from pagemind.server.app import create_app  # noqa: E402

STORY = ("Wren keeps the lamps of the tower on the northern cape.\n\nAbel, her brother, sails the ferry to the "
         "mainland twice a week.\n\nThe map was found under the third stair by Wren in the winter of the storm. "
         "She hid it in the lamp room.\n\nNobody else knew.")


def step(function: str, thoughts: str = "thinking", **arguments: object) -> str:
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


def cited_run(pm: Pagemind, run_id: str, user_id: int, doc_id: str, *snippets: str) -> list[dict]:
    """Give a done run's answer citations of ``snippets`` (as a reader that cites would)."""
    document = pm.open_document(doc_id, user_id=user_id)
    citations = [cite(document, "page", i, s, "page").as_dict() for i, s in enumerate(snippets)]  # type: ignore[union-attr]
    run = pm.runs.get(run_id, user_id)
    pm.store.update_run(run_id, result={**run.result, "citations": citations})
    return citations


@pytest.fixture
def served(tmp_path):
    # a new agent answers a question from what recall placed (the reply from recall), citing it like a search's
    fake = ScriptedLLM(by_role={"answer": "Answer: Wren found the map.", "summarise": "we talked",
                                "recall-answer": "Wren found the map under the third stair."})
    pm = Pagemind(fake, store=tmp_path / "s.db")
    ann, ann_key = users_api.create_user(pm.store, "ann")
    _, bob_key = users_api.create_user(pm.store, "bob")
    with TestClient(create_app(pm, auth="keys", workers=2)) as client:
        yield {"c": client, "pm": pm, "ann": {"Authorization": f"Bearer {ann_key}"}, "ann_id": ann.id,
               "bob": {"Authorization": f"Bearer {bob_key}"}}
    pm.close()


def ask(s: dict) -> tuple[str, str]:
    c, ann = s["c"], s["ann"]
    doc = c.post("/v1/documents", headers=ann, json={"name": "cape.txt", "text": STORY}).json()
    r = c.post(f"/v1/documents/{doc['id']}/ask", headers=ann, json={"question": "Who found the map?",
                                                                    "method": "full"})
    assert r.status_code == 200, r.text
    assert "citations" in r.json() and isinstance(r.json()["citations"], list)  # every answer carries them
    assert isinstance(c.get(f"/v1/runs/{r.json()['run_id']}", headers=ann).json()["result"]["citations"], list)
    return doc["id"], r.json()["run_id"]


def test_a_cited_location_over_http_with_its_spans_marked(served):
    c, ann = served["c"], served["ann"]
    doc_id, run_id = ask(served)
    cited_run(served["pm"], run_id, served["ann_id"], doc_id, "found under the third stair by Wren",
              "She hid it in the lamp room.", "Wren keeps the lamps")
    run = c.get(f"/v1/runs/{run_id}", headers=ann).json()
    assert [x["quote"] for x in run["result"]["citations"]][1] == "She hid it in the lamp room."  # in the run result
    r = c.get(f"/v1/runs/{run_id}/citations/1", headers=ann)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["n"] == 1 and got["citation"]["quote"] == "found under the third stair by Wren"
    assert got["text"] == STORY.split("\n\n")[2]  # the paragraph holding the span
    assert STORY[got["offset"]:got["offset"] + len(got["text"])] == got["text"] and got["chars"] == len(STORY)
    spans = {x["n"]: got["text"][x["start"]:x["end"]] for x in got["spans"]}
    assert spans == {1: "found under the third stair by Wren", 2: "She hid it in the lamp room."}  # 3: elsewhere
    assert '<cite n="1">found under the third stair by Wren</cite>' in got["marked"]
    assert '<cite n="2">She hid it in the lamp room.</cite>' in got["marked"]
    small = c.get(f"/v1/runs/{run_id}/citations/1?radius=5", headers=ann).json()
    assert small["text"] == " was found under the third stair by Wren in t"  # 5 characters either side at most
    third = c.get(f"/v1/runs/{run_id}/citations/3", headers=ann).json()
    assert third["offset"] == 0 and third["text"] == STORY.split("\n\n")[0]


def test_citation_routes_keep_tenancy_and_refuse_bad_numbers(served):
    c, ann, bob = served["c"], served["ann"], served["bob"]
    doc_id, run_id = ask(served)
    cited_run(served["pm"], run_id, served["ann_id"], doc_id, "Nobody else knew.")
    assert c.get(f"/v1/runs/{run_id}/citations/1", headers=ann).status_code == 200
    other = c.get(f"/v1/runs/{run_id}/citations/1", headers=bob)
    assert other.status_code == 404 and other.json()["type"] == "NotFound"  # another user's run
    missing = c.get(f"/v1/runs/{run_id}/citations/2", headers=ann)
    assert missing.status_code == 404 and "has no citation 2 (it has 1)" in missing.json()["detail"]
    assert c.get(f"/v1/runs/{run_id}/citations/0", headers=ann).status_code == 422
    assert c.get(f"/v1/runs/{run_id}/citations/x", headers=ann).status_code == 422
    assert c.get(f"/v1/runs/{run_id}/citations/1?radius=-1", headers=ann).status_code == 422
    assert c.get("/v1/runs/run_nope/citations/1", headers=ann).status_code == 404
    schema = c.get("/openapi.json").json()
    route = schema["paths"]["/v1/runs/{run_id}/citations/{n}"]["get"]
    assert route["operationId"] == "get_citation"
    assert route["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CitedLocation"}


def test_an_agent_turn_over_http_cites_its_archival_passage(served):
    c, ann = served["c"], served["ann"]
    agent = c.post("/v1/agents", headers=ann, json={"name": "sam", "options": {"embedder": "none"}}).json()
    passage = "The map was found under the third stair by Wren. It was winter."
    assert c.post(f"/v1/agents/{agent['id']}/archival", headers=ann, json={"text": passage}).status_code == 201
    turn = c.post(f"/v1/agents/{agent['id']}/messages", headers=ann, json={"message": "Who found the map?"})
    assert turn.status_code == 200, turn.text
    [cited] = turn.json()["citations"]
    assert (cited["document"], cited["unit"], cited["found_by"]) == ("api", "passage", "passage")
    assert cited["quote"] == passage[cited["start"]:cited["end"]] == "The map was found under the third stair by Wren."
    run = c.get(f"/v1/runs/{turn.json()['run_id']}", headers=ann).json()
    assert run["result"]["citations"] == turn.json()["citations"]
    opened = c.get(f"/v1/runs/{turn.json()['run_id']}/citations/1", headers=ann).json()
    assert opened["text"] == passage and opened["spans"] == [{"n": 1, "start": 0, "end": cited["end"]}]
    assert c.get(f"/v1/runs/{turn.json()['run_id']}/citations/1", headers=served["bob"]).status_code == 404


def test_mcp_ask_returns_citations_and_get_page_opens_one(tmp_path):
    from mcp import Client

    from pagemind.server.mcp import build_server
    from pagemind.server.service import Service

    fake = ScriptedLLM(by_role={"answer": "Answer: Wren"})
    with Pagemind(fake, store=tmp_path / "m.db") as pm:
        service = Service(pm, auth="none")
        server = build_server(service, lambda ctx: service.local)

        async def go() -> None:
            async with Client(server) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert tools["get_page"].input_schema["required"] == ["run_id"]
                doc = (await client.call_tool("add_document", {"text": STORY, "name": "cape.txt"})).structured_content
                answered = await client.call_tool("ask", {"document_id": doc["id"], "question": "Who?",
                                                          "method": "full"})
                assert not answered.is_error and isinstance(answered.structured_content["citations"], list)
                run_id = answered.structured_content["run_id"]
                cited_run(pm, run_id, service.local.id, doc["id"], "She hid it in the lamp room.")
                page = await client.call_tool("get_page", {"run_id": run_id, "citation": 1})
                assert not page.is_error, page.content[0].text
                data = page.structured_content
                assert data["citation"]["quote"] == "She hid it in the lamp room." and data["n"] == 1
                assert '<cite n="1">She hid it in the lamp room.</cite>' in page.content[0].text
                assert page.content[0].text.startswith(f"[1] page 0 of {doc['id']}")
                nothing = await client.call_tool("get_page", {"run_id": run_id, "citation": 2})
                assert nothing.is_error and "has no citation 2" in nothing.content[0].text
                bad = await client.call_tool("get_page", {"run_id": run_id, "citation": 0})
                assert bad.is_error and "citation" in bad.content[0].text
                gone = await client.call_tool("get_page", {"run_id": "run_nope"})
                assert gone.is_error and "no run 'run_nope'" in gone.content[0].text

        try:
            anyio.run(go)
        finally:
            service.close()


def test_a_real_answer_s_citation_opens_in_its_document(tmp_path):
    """The full-text reader's own citations (no constructed ones): each opens where its quote stands."""
    fake = ScriptedLLM(by_role={"answer": "Answer: Wren found the map under the third stair."})
    with Pagemind(fake, store=tmp_path / "r.db") as pm, TestClient(create_app(pm, auth="none")) as c:
        doc = c.post("/v1/documents", json={"name": "cape.txt", "text": STORY}).json()
        answer = c.post(f"/v1/documents/{doc['id']}/ask", json={"question": "Who found the map?",
                                                                "method": "full"}).json()
        assert answer["citations"], answer
        for n, cited in enumerate(answer["citations"], 1):
            assert STORY[cited["start"]:cited["end"]] == cited["quote"] and cited["document"] == doc["id"]
            got = c.get(f"/v1/runs/{answer['run_id']}/citations/{n}").json()
            span = next(s for s in got["spans"] if s["n"] == n)
            assert got["text"][span["start"]:span["end"]] == cited["quote"]
            assert f'<cite n="{n}">' in got["marked"]
