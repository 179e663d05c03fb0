"""The OpenAI-compatible chat API of ``pagemind serve`` (issue 25), with the official ``openai`` SDK as the client
against the real app on 127.0.0.1 (the scripted fake as its model): the model list, a document, a library by
extension field and by model name, streaming, an agent's turn, citations and usage, and errors in OpenAI's shape."""

from __future__ import annotations

import json
import re

import pytest

from helpers import first_words_gist, make_text, middle_label

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")

from pagemind import Pagemind, ScriptedLLM  # noqa: E402
from pagemind import users as users_api  # noqa: E402
from pagemind.server.app import create_app  # noqa: E402
from test_mcp import Served  # noqa: E402

FACT = "Wren found the map under the third stair."
STORY = make_text(6, 40).replace("p2w0 ", FACT + " ", 1)


def agent_step(request):
    return json.dumps({"thoughts": "answering", "function": "send_message",
                       "arguments": {"message": "Hello from the agent."}})


def rewrite(request):
    """The conversation's last message as a standalone question (what a model makes of "Why?" after the map)."""
    prompt = request.messages[-1].content
    return "Why did Wren look under the stair for the map?" if "Last message:\nWhy?" in prompt else \
        prompt.split("Last message:\n", 1)[1].split("\n", 1)[0]


def answer(request):
    """The answer, cut at the request's reply limit as a model cuts it (counting words as the fake's tokens); JSON
    when the request constrains the reply to a schema."""
    from pagemind.llm.base import LLMResponse

    if request.constraint is not None and request.constraint.json_schema is not None:
        return '{"who": "Wren", "where": "under the stair"}'
    words = "Wren found the map under the stair.".split()
    kept = words[:request.max_tokens]
    return LLMResponse(" ".join(kept), 10, len(kept), 0.0, "scripted",
                       finish_reason="length" if len(kept) < len(words) else "stop")


@pytest.fixture
def served(tmp_path):
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "answer": answer,
                                "agent-step": agent_step, "lookup": "[]", "rewrite": rewrite,
                                "housekeeping": '{"title": "Map under the stair"}'}, supports_json_schema=True)
    pm = Pagemind(fake, store=tmp_path / "s.db")
    ann = users_api.create_user(pm.store, "ann")
    bob = users_api.create_user(pm.store, "bob")
    with Served(create_app(pm, auth="keys", keepalive=1.0, workers=4)) as server:
        base = f"{server.url}/v1"
        yield {"base": base, "pm": pm, "fake": fake, "ann": openai.OpenAI(base_url=base, api_key=ann[1], max_retries=0),
               "bob": openai.OpenAI(base_url=base, api_key=bob[1], max_retries=0), "ann_id": ann[0].id,
               "url": server.url, "ann_key": ann[1]}
    pm.close()


def test_a_document_and_a_library_are_asked_with_the_openai_sdk(served):
    pm, client = served["pm"], served["ann"]
    doc = pm.add_document(STORY, "cape.txt", user_id=served["ann_id"])
    pm.add("shelf", [pm.read(make_text(5, 40), "other.txt"), pm.read(STORY, "cape.txt")], user_id=served["ann_id"])
    pm.create_agent(f"u{served['ann_id']}.sam", user_id=served["ann_id"], display_name="sam",
                    options={"embedder": "none", "tool_calling": "json"})
    ids = {m.id for m in client.models.list()}
    assert {"pagemind/auto", "pagemind/rag", "pagemind/memwalker", "pagemind/auto@shelf", "agent/sam"} <= ids

    asked = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hello"},
             {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Who found the map?"}]
    done = client.chat.completions.create(model="pagemind/full", messages=asked,
                                          extra_body={"pagemind": {"document_id": doc.id}})
    text = done.choices[0].message.content
    assert text.startswith("Wren found the map under the stair. [1]") and done.choices[0].finish_reason == "stop"
    assert f'Sources:\n[1] text: "{FACT}' in text
    assert done.usage.prompt_tokens > 0 and done.usage.total_tokens == done.usage.prompt_tokens + \
        done.usage.completion_tokens
    extra = done.model_extra["pagemind"]
    assert extra["citations"][0]["quote"] == FACT
    run = pm.runs.get(extra["run_id"], served["ann_id"])  # a recorded run, as every ask
    assert run.kind == "ask" and run.request["question"] == "Who found the map?" and run.status == "done"

    by_name = client.chat.completions.create(model="pagemind/rag@shelf", messages=asked[-1:])
    assert "[1] cape.txt, fragment" in by_name.choices[0].message.content
    assert by_name.model_extra["pagemind"]["citations"][0]["document_name"] == "cape.txt"
    bare = client.chat.completions.create(model="pagemind/full", messages=asked[-1:],
                                          extra_body={"pagemind": {"library": "shelf", "sources": False}})
    assert bare.choices[0].message.content == "Wren found the map under the stair. [1]"

    chunks = list(client.chat.completions.create(model="pagemind/full", messages=asked, stream=True,
                                                 stream_options={"include_usage": True},
                                                 extra_body={"pagemind": {"document_id": doc.id}}))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == text  # the same reply, in pieces
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.prompt_tokens == done.usage.prompt_tokens and not chunks[-1].choices

    said = client.chat.completions.create(model="agent/sam", messages=[{"role": "user", "content": "Hi there"}])
    assert said.choices[0].message.content == "Hello from the agent."
    assert said.model_extra["pagemind"]["stop_reason"] in ("yield", "last_step")


def test_errors_come_in_openai_s_shape(served):
    pm, client = served["pm"], served["ann"]
    doc = pm.add_document(STORY, "cape.txt", user_id=served["ann_id"])
    question = [{"role": "user", "content": "Who?"}]
    with pytest.raises(openai.AuthenticationError) as refused:
        openai.OpenAI(base_url=served["base"], api_key="pm_wrong", max_retries=0).chat.completions.create(
            model="pagemind/full", messages=question)
    assert "a valid API key is needed" in refused.value.message and refused.value.body["type"] == \
        "authentication_error"
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="gpt-4o", messages=question)
    assert "pagemind/<method>" in unknown.value.message
    with pytest.raises(openai.UnprocessableEntityError) as unnamed:
        client.chat.completions.create(model="pagemind/full", messages=question)
    assert "name what to read" in unnamed.value.message
    with pytest.raises(openai.NotFoundError):  # another user's document is not found
        served["bob"].chat.completions.create(model="pagemind/full", messages=question,
                                              extra_body={"pagemind": {"document_id": doc.id}})
    with pytest.raises(openai.BadRequestError) as invalid:
        client.chat.completions.create(model="pagemind/full", messages=[])
    assert invalid.value.body["param"] == "messages"
    with pytest.raises(openai.UnprocessableEntityError) as wordless:
        client.chat.completions.create(model="pagemind/full", messages=[{"role": "assistant", "content": "x"}],
                                       extra_body={"pagemind": {"document_id": doc.id}})
    assert "no user message" in wordless.value.message
    with pytest.raises(openai.UnprocessableEntityError) as bad_option:
        client.chat.completions.create(model="pagemind/memwalker", messages=question, extra_body={
            "pagemind": {"document_id": doc.id, "method_options": {"max_pages": 3}}})
    assert "max_pages" in bad_option.value.message


def test_the_answer_call_takes_the_clients_settings_and_what_cannot_be_honoured_is_refused(served):
    """max_tokens (finish_reason length when cut), temperature, stop and seed reach the answer call and nothing else;
    response_format json is the backend's constrained decoding, with no markers or sources after the JSON; n>1,
    tools and a forced tool_choice are a 400 naming the parameter; models.retrieve; the run id as x-request-id; the
    APIs pagemind does not serve are a 404 that says so."""
    pm, client, fake = served["pm"], served["ann"], served["fake"]
    doc = pm.add_document(STORY, "cape.txt", user_id=served["ann_id"])
    ext = {"pagemind": {"document_id": doc.id}}
    question = [{"role": "user", "content": "Who found the map?"}]

    raw = client.chat.completions.with_raw_response.create(
        model="pagemind/full", messages=question, max_tokens=3, temperature=0.7, stop=["\n\n"], seed=7,
        extra_body=ext)
    cut = raw.parse()
    assert cut.choices[0].finish_reason == "length" and cut.choices[0].message.content.startswith("Wren found the")
    assert raw.headers["x-request-id"] == cut.model_extra["pagemind"]["run_id"]
    sent = [r for r in fake.history if r.role == "answer"][-1]
    assert (sent.max_tokens, sent.temperature, sent.stop, sent.seed) == (3, 0.7, ("\n\n",), 7)
    client.chat.completions.create(model="pagemind/full", messages=question, max_completion_tokens=4, extra_body=ext)
    assert [r for r in fake.history if r.role == "answer"][-1].max_tokens == 4
    streamed = list(client.chat.completions.create(model="pagemind/full", messages=question, max_tokens=2,
                                                   stream=True, extra_body=ext))
    assert [c.choices[0].finish_reason for c in streamed if c.choices][-1] == "length"

    fake.history.clear()  # a method's own calls keep their settings: ReadAgent's pagination, gists and look-up
    client.chat.completions.create(model="pagemind/readagent-p", messages=question, max_tokens=3, extra_body=ext)
    own = [r for r in fake.history if r.role != "answer"]
    assert own and all(r.max_tokens != 3 and r.seed is None for r in own)

    shaped = client.chat.completions.create(model="pagemind/full", messages=question, extra_body=ext,
                                            response_format={"type": "json_object"})
    assert json.loads(shaped.choices[0].message.content) == {"who": "Wren", "where": "under the stair"}
    assert [r for r in fake.history if r.role == "answer"][-1].constraint.json_schema == {"type": "object"}
    schema = {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}
    client.chat.completions.create(model="pagemind/full", messages=question, extra_body=ext, response_format={
        "type": "json_schema", "json_schema": {"name": "who", "schema": schema}})
    assert [r for r in fake.history if r.role == "answer"][-1].constraint.json_schema == schema

    for params, named, code in (
            ({"n": 2}, "n", "unsupported_parameter"),
            ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools", "unsupported_parameter"),
            ({"tool_choice": "required"}, "tool_choice", "unsupported_parameter"),
            ({"response_format": {"type": "json_schema"}}, "response_format", "invalid_request")):
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="pagemind/full", messages=question, extra_body=ext, **params)
        assert (refused.value.body["param"], refused.value.body["code"]) == (named, code), refused.value.body

    assert client.models.retrieve("pagemind/rag").id == "pagemind/rag"
    with pytest.raises(openai.NotFoundError, match="GET /v1/models lists yours"):
        client.models.retrieve("gpt-4o")
    # the Responses API, for clients that speak only it: the same answer as the chat request it means
    said = client.responses.create(model="pagemind/full", input="Who found the map?", extra_body=ext)
    assert said.status == "completed" and said.output_text.startswith("Wren found the map under the stair. [1]")
    assert said.model_extra["pagemind"]["citations"][0]["quote"] == FACT and said.usage.output_tokens > 0
    cut = client.responses.create(model="pagemind/full", input=[{"role": "user", "content": [
        {"type": "input_text", "text": "Who found the map?"}]}], max_output_tokens=3, extra_body=ext)
    assert cut.status == "incomplete" and cut.incomplete_details.reason == "max_output_tokens"
    for params, named in (({"max_output_tokens": 0}, "max_output_tokens"), ({"input": []}, "input")):
        with pytest.raises(openai.BadRequestError) as refused:  # named as the Responses API names them
            client.responses.create(**{"model": "pagemind/full", "input": "map", **params}, extra_body=ext)
        assert refused.value.body["param"] == named and refused.value.body["message"].startswith(named)
    # streamed as the Responses API's events, which the SDK's own accumulator reads into the same response
    with client.responses.stream(model="pagemind/full", input="Who found the map?", extra_body=ext) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert "response.output_text.delta" in kinds and kinds[-1] == "response.completed"
    assert final.status == "completed" and final.output_text == said.output_text
    with pytest.raises(openai.NotFoundError, match="/v1/completions is not served"):
        client.completions.create(model="pagemind/full", prompt="map")


def test_embeddings_from_the_embedded_encoder_with_the_openai_sdk(served):
    """/v1/embeddings: the SDK's default (base64) and floats decode to pm.embed's vectors, 384 unit numbers each,
    near for texts that mean the same; what pagemind cannot serve is refused naming the parameter."""
    import httpx
    import numpy as np

    pm, client = served["pm"], served["ann"]
    texts = ["Who found the map?", "The map was found by Wren.", "Abel sails the ferry."]
    made = client.embeddings.create(model="pagemind/minilm", input=texts)
    vectors = np.array([d.embedding for d in made.data])
    assert vectors.shape == (3, 384) and [d.index for d in made.data] == [0, 1, 2]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.allclose(vectors, pm.embed(texts).vectors, atol=1e-6)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.1  # the map question is near the map sentence
    assert made.usage.prompt_tokens == sum(pm.embed(texts).tokens) > 10 and made.model == "pagemind/minilm"
    floats = httpx.post(f"{served['url']}/v1/embeddings", json={"model": "pagemind/minilm", "input": texts[0],
                                                                "encoding_format": "float"},
                        headers={"Authorization": f"Bearer {served['ann_key']}"})
    assert floats.status_code == 200 and np.allclose(floats.json()["data"][0]["embedding"], vectors[0], atol=1e-6)
    assert client.models.retrieve("pagemind/minilm").id == "pagemind/minilm"
    for params, status, named in (({"dimensions": 128}, openai.BadRequestError, "dimensions"),
                                  ({"model": "text-embedding-3-small"}, openai.NotFoundError, "model"),
                                  ({"input": [[101, 2054]]}, openai.BadRequestError, "input"),
                                  ({"input": ""}, openai.BadRequestError, "input")):
        with pytest.raises(status) as refused:
            client.embeddings.create(**{"model": "pagemind/minilm", "input": "map", **params})
        assert refused.value.body["param"] == named, refused.value.body
    with pytest.raises(openai.UnprocessableEntityError, match="at most 8192 are embedded as one text"):
        client.embeddings.create(model="pagemind/minilm", input="word " * 9000)


def test_the_conversation_reaches_the_reader_as_a_standalone_question(served):
    """Earlier turns and the system message are read: "Why?" after a question about the map is asked as the question
    it means (one rewrite call, recorded in the run); a lone question is asked as it is, with no rewrite; a part
    pagemind cannot read is refused, not dropped."""
    pm, client, fake = served["pm"], served["ann"], served["fake"]
    doc = pm.add_document(STORY, "cape.txt", user_id=served["ann_id"])
    ext = {"pagemind": {"document_id": doc.id}}
    conversation = [{"role": "system", "content": "Answer in one sentence."},
                    {"role": "user", "content": "Who found the map?"},
                    {"role": "assistant", "content": "Wren found the map under the stair."},
                    {"role": "user", "content": "Why?"}]
    fake.history.clear()
    done = client.chat.completions.create(model="pagemind/full", messages=conversation, extra_body=ext)
    rewrite_request, answer_request = fake.history[0], fake.history[-1]
    assert [r.role for r in fake.history] == ["rewrite", "answer"]
    shown = rewrite_request.messages[-1].content
    assert "Answer in one sentence." in shown and "assistant: Wren found the map under the stair." in shown
    assert "Why did Wren look under the stair for the map?" in answer_request.messages[-1].content
    run = pm.runs.get(done.model_extra["pagemind"]["run_id"], served["ann_id"])
    assert run.request["question"] == "Why?" and len(run.request["conversation"]) == 3
    assert run.result["details"]["standalone"]["question"] == "Why did Wren look under the stair for the map?"

    fake.history.clear()
    client.chat.completions.create(model="pagemind/full", messages=conversation[-1:], extra_body=ext)
    assert [r.role for r in fake.history] == ["answer"]  # nothing before it: no rewrite

    image = [{"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                          {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]
    with pytest.raises(openai.UnprocessableEntityError, match="image_url parts: pagemind's models read text"):
        client.chat.completions.create(model="pagemind/full", messages=image, extra_body=ext)


# The framing of the task requests Open WebUI sends to the chat model it is set to use for its own menus (its title,
# tags and follow-up templates in open_webui/config.py, read there and written here in our words, the same shape):
# "### Task:" and sections, with the chat's last messages in <chat_history> tags.
UI_TASK = """### Task:
{task}
### Guidelines:
- Keep it short.
### Output:
JSON format: {output}
### Chat History:
<chat_history>
USER: Who found the map?
ASSISTANT: Wren found the map under the stair.
</chat_history>"""


def test_a_chat_ui_picks_a_model_from_its_menu_and_its_own_tasks_are_not_library_questions(served):
    pm, client, fake = served["pm"], served["ann"], served["fake"]
    pm.add("shelf", [pm.read(STORY, "cape.txt")], user_id=served["ann_id"])
    question = [{"role": "user", "content": "Who found the map?"}]
    # a menu pick names no document: the user's only library is read (and said)
    picked = client.chat.completions.create(model="pagemind/full", messages=question)
    assert "[1] cape.txt" in picked.choices[0].message.content
    runs = len(pm.runs.list(served["ann_id"]))
    for task, output in (("Generate a concise, 3-5 word title summarizing the chat history.", '{ "title": "..." }'),
                         ("Generate 1-3 broad tags categorizing the main themes of the chat history.",
                          '{ "tags": ["..."] }'),
                         ("Suggest 3-5 relevant follow-up questions the user might ask next.",
                          '{ "follow_ups": ["..."] }')):
        fake.history.clear()
        done = client.chat.completions.create(model="pagemind/auto", messages=[
            {"role": "user", "content": UI_TASK.format(task=task, output=output)}], max_tokens=1000, stream=False)
        assert done.choices[0].message.content == '{"title": "Map under the stair"}'  # the model's reply, as it is
        assert [r.role for r in fake.history] == ["housekeeping"] and done.model_extra["pagemind"]["housekeeping"]
    streamed = list(client.chat.completions.create(model="pagemind/auto", stream=True, messages=[
        {"role": "user", "content": UI_TASK.format(task="Generate a title.", output="{}")}]))
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == \
        '{"title": "Map under the stair"}'
    assert len(pm.runs.list(served["ann_id"])) == runs  # no run recorded, no library read
    pm.add("other", [pm.read(make_text(3, 20), "x.txt")], user_id=served["ann_id"])
    with pytest.raises(openai.UnprocessableEntityError, match="keep one library"):
        client.chat.completions.create(model="pagemind/full", messages=question)


def test_an_embeddings_client_that_leaves_stops_the_encoder(served, caplog):
    """Issue 49: a large /v1/embeddings request whose client times out is not finished: the encoder stops at its
    next group of texts and the server says how far it got; the same client's next request is served."""
    import time
    from dataclasses import replace

    texts = [f"Passage {n}: the ferry leaves the cape at dawn and the map lies under the third stair." * 4
             for n in range(2_000)]
    with pytest.raises(openai.UnprocessableEntityError, match="at most 15,000 are embedded in one request"):
        served["ann"].embeddings.create(model="pagemind/minilm", input=texts)  # by default ~5 s of CPU at most
    served["pm"].settings = replace(served["pm"].settings, embed_tokens=300_000)  # as `serve --embed-tokens 300000`
    impatient = openai.OpenAI(base_url=served["base"], api_key=served["ann_key"], max_retries=0, timeout=0.5)
    with caplog.at_level("WARNING", logger="pagemind"):
        with pytest.raises(openai.APITimeoutError):
            impatient.embeddings.create(model="pagemind/minilm", input=texts)
        deadline = time.time() + 60
        while time.time() < deadline and "embedding stopped" not in caplog.text:
            time.sleep(0.2)
    stopped = re.search(r"/v1/embeddings: embedding stopped after (\d+) of 2000 texts: the client left", caplog.text)
    assert stopped is not None and int(stopped.group(1)) < 2_000, caplog.text
    assert len(served["ann"].embeddings.create(model="pagemind/minilm", input=texts[:2]).data) == 2


def held_answers(tmp_path):
    """A session whose answer calls wait until the test releases them: (the release, the fake, the session, ann
    (her row and key), her document)."""
    import threading

    release = threading.Event()

    def slow_answer(request):
        release.wait(10)
        return "Wren found the map under the stair."

    fake = ScriptedLLM(by_role={"answer": slow_answer})
    pm = Pagemind(fake, store=tmp_path / "s.db")
    ann = users_api.create_user(pm.store, "ann")
    return release, fake, pm, ann, pm.add_document(STORY, "cape.txt", user_id=ann[0].id)


def test_a_client_that_leaves_stops_its_run_and_an_identical_retry_joins_it(tmp_path):
    """The SDK's timeout (a client gone mid-answer) cancels the run it alone waited on, streamed or not, and the run
    stops (pagemind logs shows it cancelled); an identical request sent while the first runs joins it: one run, one
    answer call, both clients answered."""
    import threading
    import time

    import httpx

    release, fake, pm, ann, doc = held_answers(tmp_path)
    body = {"model": "pagemind/full", "messages": [{"role": "user", "content": "Who found the map?"}],
            "pagemind": {"document_id": doc.id}}
    with Served(create_app(pm, auth="keys", keepalive=1.0, workers=4)) as server:
        impatient = openai.OpenAI(base_url=f"{server.url}/v1", api_key=ann[1], max_retries=0, timeout=0.8)
        for stream in (False, True):
            with pytest.raises(openai.APITimeoutError):
                made = impatient.chat.completions.create(**{k: v for k, v in body.items() if k != "pagemind"},
                                                         extra_body={"pagemind": body["pagemind"]}, stream=stream)
                list(made) if stream else None
            time.sleep(1.0)  # the server sees the disconnect within half a second
            release.set()  # the answer call returns; the run stops at its next check
            deadline = time.time() + 10
            while time.time() < deadline and pm.runs.list(ann[0].id)[0].status not in ("cancelled", "done"):
                time.sleep(0.1)
            assert pm.runs.list(ann[0].id)[0].status == "cancelled", (stream, pm.runs.list(ann[0].id)[0])
            release.clear()

        before, calls = len(pm.runs.list(ann[0].id)), len(fake.history)
        results: list[dict] = []

        def send() -> None:
            r = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30,
                           headers={"Authorization": f"Bearer {ann[1]}"})
            results.append({"status": r.status_code, "run": r.headers.get("x-request-id"), "json": r.json()})

        first = threading.Thread(target=send)
        first.start()
        time.sleep(0.5)
        second = threading.Thread(target=send)  # the same request again while the first runs
        second.start()
        time.sleep(0.5)
        release.set()
        first.join(20)
        second.join(20)
    runs = pm.runs.list(ann[0].id)
    pm.close()
    assert [r["status"] for r in results] == [200, 200] and results[0]["run"] == results[1]["run"]
    assert len(runs) == before + 1 and len(fake.history) == calls + 1
    assert results[0]["json"]["choices"][0]["message"]["content"] == \
        results[1]["json"]["choices"][0]["message"]["content"]


def test_support_rides_in_the_extension_and_an_unsupported_answer_says_the_document_does_not_say(served):
    """Issue 38 through the openai SDK: the support of a cited answer in the ``pagemind`` extension; a document that
    does not hold the answer gets "The document does not say" as the content (the model's draft in the extension),
    and a stream that already sent the draft ends with the abstention."""
    pm, client = served["pm"], served["ann"]
    told = pm.add_document(STORY, "cape.txt", user_id=served["ann_id"])
    silent = pm.add_document(make_text(6, 30), "filler.txt", user_id=served["ann_id"])
    asked = [{"role": "user", "content": "Who found the map?"}]
    done = client.chat.completions.create(model="pagemind/full", messages=asked,
                                          extra_body={"pagemind": {"document_id": told.id}})
    extra = done.model_extra["pagemind"]
    assert extra["support"]["label"] == "supported" and extra["abstained"] is False and extra["confidence"] > 0.5
    gone = client.chat.completions.create(model="pagemind/full", messages=asked,
                                          extra_body={"pagemind": {"document_id": silent.id}})
    text = gone.choices[0].message.content
    assert text.startswith("The document does not say") and "Wren" not in text
    assert gone.model_extra["pagemind"]["abstained"] is True
    assert gone.model_extra["pagemind"]["draft"] == "Wren found the map under the stair."
    chunks = list(client.chat.completions.create(model="pagemind/full", messages=asked, stream=True,
                                                 extra_body={"pagemind": {"document_id": silent.id}}))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed.startswith("Wren found the map under the stair.\n\nThe document does not say")
    assert [c.model_extra.get("pagemind") for c in chunks if c.model_extra.get("pagemind")][-1]["abstained"] is True


def test_reply_settings_win_over_an_abstention_and_the_sources(tmp_path):
    """Issue 49: with response_format an answer the sources do not hold abstains in JSON ({"abstained": true, ...}),
    or, where the client's schema has no room for that, a 422 saying so — never prose; a JSON stream sends what the
    non-streamed reply would (no unsupported draft first); a token limit leaves the Sources block out (the citations
    stay in the pagemind extension) and cuts an abstention to its first sentence."""
    def invented(request):
        if request.constraint is not None and request.constraint.json_schema is not None:
            return '{"who": "Captain Ahab", "where": "the Pequod"}'
        return "Captain Ahab found the map on the Pequod."

    fake = ScriptedLLM(by_role={"answer": invented}, supports_json_schema=True)
    pm = Pagemind(fake, store=tmp_path / "s.db")
    ann = users_api.create_user(pm.store, "ann")
    doc = pm.add_document(STORY, "cape.txt", user_id=ann[0].id)
    question = [{"role": "user", "content": "Who found the map?"}]
    ext = {"pagemind": {"document_id": doc.id}}
    closed = {"type": "object", "properties": {"who": {"type": "string"}, "where": {"type": "string"}},
              "required": ["who", "where"], "additionalProperties": False}
    roomy = {"anyOf": [closed, {"type": "object", "properties": {"abstained": {"const": True},
                                                                 "reason": {"type": "string"}},
                                "required": ["abstained"]}]}
    with Served(create_app(pm, auth="keys", keepalive=1.0, workers=4)) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=ann[1], max_retries=0)
        plain = client.chat.completions.create(model="pagemind/full", messages=question, extra_body=ext,
                                               response_format={"type": "json_object"})
        said = json.loads(plain.choices[0].message.content)
        assert said["abstained"] is True and said["reason"].startswith("The document does not say")
        assert plain.model_extra["pagemind"]["abstained"] is True
        fits = client.chat.completions.create(model="pagemind/full", messages=question, extra_body=ext,
                                              response_format={"type": "json_schema", "json_schema": {
                                                  "name": "finding", "schema": roomy}})
        assert json.loads(fits.choices[0].message.content)["abstained"] is True
        with pytest.raises(openai.UnprocessableEntityError, match="has no room to say so"):
            client.chat.completions.create(model="pagemind/full", messages=question, extra_body=ext,
                                           response_format={"type": "json_schema", "json_schema": {
                                               "name": "finding", "schema": closed}})
        streamed = client.chat.completions.create(model="pagemind/full", messages=question, extra_body=ext,
                                                  response_format={"type": "json_object"}, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        assert text == plain.choices[0].message.content and "Ahab" not in text.split('"reason"')[0]
        short = client.chat.completions.create(model="pagemind/full", messages=question, extra_body=ext,
                                               max_tokens=5)
        content = short.choices[0].message.content
        assert content.startswith("The document does not say") and "Sources:" not in content
        assert content.count(".") <= 2 and short.model_extra["pagemind"]["citations"]
    pm.close()


def test_a_native_ask_follows_its_client_as_the_chat_route_does(tmp_path):
    """Issue 49: POST /v1/documents/{id}/ask waited on by a client that leaves (its timeout) is cancelled — it alone
    waited — and recorded so; an identical ask sent while the first runs joins it (one run, one answer call); a
    queued ask (wait=false) goes on whoever leaves."""
    import threading
    import time

    import httpx

    release, fake, pm, ann, doc = held_answers(tmp_path)
    headers = {"Authorization": f"Bearer {ann[1]}"}
    body = {"question": "Who found the map?", "method": "full"}
    with Served(create_app(pm, auth="keys", keepalive=1.0, workers=4)) as server:
        url = f"{server.url}/v1/documents/{doc.id}/ask"
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url, json=body, headers=headers, timeout=0.8)
        time.sleep(1.0)  # the server sees the disconnect within half a second
        release.set()
        deadline = time.time() + 10
        while time.time() < deadline and pm.runs.list(ann[0].id)[0].status not in ("cancelled", "done"):
            time.sleep(0.1)
        assert pm.runs.list(ann[0].id)[0].status == "cancelled", pm.runs.list(ann[0].id)[0]
        release.clear()

        before, calls = len(pm.runs.list(ann[0].id)), len(fake.history)
        results: list[httpx.Response] = []
        threads = [threading.Thread(target=lambda: results.append(httpx.post(url, json=body, headers=headers,
                                                                             timeout=30))) for _ in range(2)]
        threads[0].start()
        time.sleep(0.5)
        threads[1].start()  # the same ask again while the first runs
        time.sleep(0.5)
        release.set()
        for t in threads:
            t.join(20)
        assert [r.status_code for r in results] == [200, 200]
        assert results[0].json()["run_id"] == results[1].json()["run_id"]
        assert len(pm.runs.list(ann[0].id)) == before + 1 and len(fake.history) == calls + 1
        release.clear()

        queued = httpx.post(url + "?wait=false", json={**body, "question": "Where was the map?"}, headers=headers,
                            timeout=5)
        assert queued.status_code == 202
        release.set()
        deadline = time.time() + 10
        while time.time() < deadline and pm.runs.get(queued.json()["id"], ann[0].id).status != "done":
            time.sleep(0.1)
        assert pm.runs.get(queued.json()["id"], ann[0].id).status == "done"  # nobody waited: it went on
    pm.close()
