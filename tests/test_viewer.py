"""The web trace viewer in a real browser: Debian's headless Chromium driven by Playwright against the real HTTP app
(uvicorn on 127.0.0.1, the scripted fake as its LLM). Sign in, upload a document whose name is markup (shown
literally), ask with ReadAgent and watch step rows arrive while the run is still going, the run page's page strip,
an agent's core memory and a turn's steps, MemWalker's walk on its tree. A screenshot of every page is written to
the test's directory (``PAGEMIND_VIEWER_SHOTS=DIR`` copies them there)."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

from helpers import first_words_gist, make_text, middle_label

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed (scripts/install.sh)")

from pagemind import Pagemind, ScriptedLLM
from pagemind import users as users_api
from pagemind.llm.llamaserver import free_port
from pagemind.server.app import create_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="no Chromium: Debian's chromium package "
                                       "(scripts/install.sh installs it with apt)")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
MARKUP_NAME = "<img src=x onerror=alert(1)>.txt"
LEAF_TAIL = ". Summarize the above text comprehensively into a fluent passage."
NONLEAF_TAIL = ". Compress each summary into a much shorter summary."


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


class Gate:
    """A reply that waits until the test opens the gate (a long model call), then answers."""

    def __init__(self, reply):
        self.event = threading.Event()
        self.reply = reply

    def __call__(self, request):
        assert self.event.wait(60), "the test never opened the gate"
        return self.reply(request)


def summarise(request):
    """MemWalker's node summaries (the first words of the node), or an agent's eviction summary."""
    content = request.messages[0].content
    for tail in (LEAF_TAIL, NONLEAF_TAIL):
        if content.endswith(tail):
            return "About " + " ".join(content[: -len(tail)].split()[:6])
    return "we talked"


class Walker:
    """MemWalker's navigation: triage picks the first child offered; the first leaf read is rejected (-1), the
    next one answers (-2)."""

    def __init__(self):
        self.leaves = 0

    def __call__(self, request):
        content = request.messages[0].content
        offered = re.findall(r"^Summary (\d+):", content, flags=re.MULTILINE)
        if offered:
            return f"Reasoning: part {offered[0]} looks closest.\nAction: {offered[0]}"
        self.leaves += 1
        if self.leaves == 1:
            return "Reasoning: nothing about the map here.\nAction: -1"
        return "Reasoning: the map is found here.\nAction: -2\nAnswer: the map under the stairs"


class AgentScript:
    """A turn: save the user's name to core memory (a memory edit, with a heartbeat), then reply."""

    def __init__(self):
        self.steps = 0

    def __call__(self, request):
        self.steps += 1
        if self.steps % 2 == 1:
            return call("core_memory_append", thoughts="The user told me their name; I should remember it.",
                        label="human", content="Name: Ann", request_heartbeat=True)
        return call("send_message", thoughts="Now greet her.", message="Nice to meet you, Ann!")


@pytest.fixture
def gate():
    return Gate(first_words_gist)


@pytest.fixture
def auth():
    return "keys"


@pytest.fixture
def server(tmp_path, gate, auth):
    """The real app on 127.0.0.1 in a uvicorn thread (``auth``: keys, or none when a test parametrizes it)."""
    import uvicorn

    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": gate, "lookup": "I want to look up Page [1, 2] to",
                                "answer": "Answer: the map is under the stairs", "summarise": summarise,
                                "navigate": Walker(), "agent-step": AgentScript(),
                                "recall-answer": "Yes, you told me your name is Ann.",
                                "consolidate": json.dumps({"summary": "Ann said hello.", "human": ["Name: Ann"],
                                                           "facts": ["The user, Ann, said hello."]})})
    pm = Pagemind(fake, store=tmp_path / "s.db")
    key = users_api.create_user(pm.store, "ann")[1] if auth == "keys" else None
    app = create_app(pm, auth=auth, keepalive=1.0, workers=4)
    port = free_port()
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not uv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield {"url": f"http://127.0.0.1:{port}", "key": key, "pm": pm, "gate": gate}
    gate.event.set()
    uv.should_exit = True
    thread.join(20)
    pm.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, tmp_path):
    """A fresh tab that records JavaScript errors and alerts (none may happen)."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    tab.problems = []
    tab.on("pageerror", lambda err: tab.problems.append(f"page error: {err}"))
    tab.on("console", lambda msg: msg.type == "error" and tab.problems.append(f"console: {msg.text}"))
    tab.on("dialog", lambda dialog: (tab.problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    yield tab
    context.close()


@pytest.fixture
def shoot(tmp_path):
    """Save a full-page screenshot ``name.png`` (and copy it to $PAGEMIND_VIEWER_SHOTS when set)."""
    target = os.environ.get("PAGEMIND_VIEWER_SHOTS")

    def save(tab, name):
        assert tab.locator("main > .error").count() == 0, tab.inner_text("main > .error")  # a page that failed
        path = tmp_path / f"{name}.png"
        tab.screenshot(path=str(path), full_page=True, animations="disabled")
        assert path.stat().st_size > 5000
        if target:
            Path(target).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(target) / path.name)
        return path

    return save


def sign_in(tab, server, shoot=None):
    tab.goto(server["url"] + "/")
    tab.wait_for_selector("form.signin")
    if shoot:
        shoot(tab, "0-sign-in")
    tab.fill("#key", "pm-not-a-key")
    tab.click("form.signin button[type=submit]")
    tab.wait_for_selector("form.signin .error:not([hidden])")
    assert "not accepted" in tab.inner_text("form.signin .error")
    assert all("401" in p for p in tab.problems), tab.problems  # the browser logs the refused request itself
    tab.problems.clear()
    tab.fill("#key", server["key"])
    tab.click("form.signin button[type=submit]")
    tab.wait_for_selector("#upload")
    assert tab.inner_text("#who .user") == "ann"


def test_sign_in_upload_a_markup_name_ask_live_and_the_page_strip(server, page, shoot):
    tab = page
    sign_in(tab, server, shoot)
    shoot(tab, "1-documents-empty")

    # a file whose name is markup: listed literally, no element made of it, no script run
    tab.set_input_files("#upload-file", files=[{"name": MARKUP_NAME, "mimeType": "text/plain",
                                                "buffer": make_text(30, 60).encode()}])
    tab.click("#upload button[type=submit]")
    link = tab.wait_for_selector("#documents a.docname")
    assert link.inner_text() == MARKUP_NAME
    assert tab.locator("#documents img").count() == 0 and tab.locator("img").count() == 0
    shoot(tab, "2-documents")

    link.click()
    tab.wait_for_selector("#ask-form")
    assert tab.inner_text("h1.docname") == MARKUP_NAME
    # the method picker comes from /v1/methods; its option form from the method's schema
    tab.select_option("#method", "readagent-p")
    tab.click("details.method-options summary")
    assert tab.locator("#opt-max_pages").count() == 1 and tab.locator("#opt-preset option").count() > 2
    tab.fill("#opt-max_pages", "2")
    tab.fill("#question", "Where is the map?")
    shoot(tab, "3-document")
    tab.click("#ask")

    # the run page: pagination calls arrive while the run is still running (the gist calls wait at the gate)
    tab.wait_for_url(re.compile(r"#/runs/run_"))
    tab.wait_for_selector("#steps li.step-llm")
    tab.wait_for_function("document.querySelector('#live')?.textContent === 'live'")
    assert tab.inner_text(".page-head .pill") == "running"
    rows = tab.locator("#steps li.step-llm").count()
    assert rows >= 1 and "paginate" in tab.inner_text("#steps")
    assert tab.locator("#answer").count() == 0
    run_id = tab.url.rsplit("/", 1)[1]
    assert server["pm"].runs.get(run_id, server["pm"].store.get_user("ann").id).status == "running"
    shoot(tab, "4-run-live")

    server["gate"].event.set()
    tab.wait_for_selector("#answer")
    tab.wait_for_selector("#page-strip")
    assert tab.locator("#steps li.step-llm").count() > rows
    assert "the map is under the stairs" in tab.inner_text("#answer")
    assert tab.inner_text(".page-head .pill") == "done"
    # the page strip: every page, the looked-up ones marked, each gist beside its page
    run = server["pm"].runs.get(run_id, server["pm"].store.get_user("ann").id)
    looked = [int(x) for x in tab.locator("#page-strip .cell.looked").all_inner_texts()]
    assert looked == run.result["pages_read"] == [1, 2]
    memory = server["pm"].store.items(run.result["memory"], "gist")
    assert tab.locator("#page-strip .cell").count() == len(memory) > 2
    assert tab.inner_text("#gist-1 .gist-text").startswith(memory[1]["text"])
    assert "looked up" in tab.inner_text("#gist-1") and "looked up" not in tab.inner_text("#gist-0")
    # the cost summary adds up the recorded calls
    calls = tab.inner_text("#cost [data-stat=calls] .stat-value")
    assert int(calls.replace(",", "")) == sum(s.kind == "llm" for s in server["pm"].runs.steps(run_id))
    assert MARKUP_NAME in tab.inner_text(".page-head .facts")
    shoot(tab, "5-run")

    tab.click("#nav a[data-section=runs]")
    tab.wait_for_selector("table.runs")
    assert tab.locator("table.runs tbody tr").count() == 1
    tab.select_option("#filter-kind", "turn")
    tab.wait_for_selector(".empty")
    tab.select_option("#filter-kind", "ask")
    tab.wait_for_selector("table.runs")
    shoot(tab, "6-runs")
    assert not tab.problems, tab.problems


def test_an_agent_shows_its_memory_and_a_turn_s_steps_live(server, page, shoot):
    tab = page
    sign_in(tab, server)
    tab.click("#nav a[data-section=agents]")
    tab.fill("#agent-name", "sam")
    tab.fill("#agent-human", "A visitor.")
    tab.click("#agent-form button[type=submit]")
    tab.wait_for_selector("#blocks .block")
    labels = tab.locator("#blocks .block").evaluate_all("els => els.map(e => e.dataset.label)")
    assert labels == ["persona", "human"]
    assert "A visitor." in tab.inner_text("#blocks [data-label=human]")

    tab.fill("#message", "Hello, I am Ann <b>!</b>")
    tab.click("#send")
    tab.wait_for_selector("#turn li.step-agent")
    # the turn's steps: thoughts, the memory edit with its arguments, then send_message
    tab.wait_for_function("document.querySelectorAll('#turn li.step-agent').length >= 2")
    turn = tab.inner_text("#turn")
    assert "core_memory_append()" in turn and "memory edit" in turn and "Name: Ann" in turn
    assert "The user told me their name" in turn and "send_message()" in turn
    # afterwards the conversation and core memory are read again
    tab.wait_for_function("document.querySelector('#blocks [data-label=human]')?.textContent.includes('Name: Ann')")
    tab.wait_for_selector("#messages .msg.agent")
    assert tab.locator("#messages .msg.user .bubble").first.inner_text() == "Hello, I am Ann <b>!</b>"
    assert "Nice to meet you, Ann!" in tab.inner_text("#messages")
    assert tab.locator("#messages b").count() == 0
    # the block's history: the agent's edit with its step and diff, the first version, and a revert to it
    tab.click("#blocks [data-label=human] button:has-text('History')")
    tab.wait_for_selector("#blocks [data-label=human] .version")
    versions = tab.locator("#blocks [data-label=human] .version").all_inner_texts()
    assert len(versions) == 2 and "core_memory_append" in versions[0] and "+" in versions[0]
    assert "Name: Ann" in tab.inner_text("#blocks [data-label=human] .version .diff .add") and "create" in versions[1]
    tab.click("#blocks [data-label=human] .version[data-version='1'] button:has-text('Revert to this')")
    tab.wait_for_function("!document.querySelector('#blocks [data-label=human]')?.textContent.includes('Name: Ann')")
    assert "A visitor." in tab.inner_text("#blocks [data-label=human]")
    shoot(tab, "7-agent")

    tab.click("#turn a")
    tab.wait_for_selector("#answer")
    assert "Nice to meet you, Ann!" in tab.inner_text("#answer")
    tab.wait_for_function("document.querySelectorAll('#steps li.step-agent').length === 2")  # the steps stream in
    shoot(tab, "8-turn-run")

    tab.click("#nav a[data-section=agents]")
    tab.wait_for_selector("#agents")
    assert tab.inner_text("#agents a") == "sam"

    # a consolidation pass is a run of its own kind: its page says what it read and wrote (issue 50)
    import httpx

    pm = server["pm"]
    ann = pm.store.get_user("ann")
    agent_id = pm.store.user_agents(ann.id)[0].id
    done = httpx.post(f"{server['url']}/v1/agents/{agent_id}/memory/consolidate", timeout=30,
                      headers={"Authorization": f"Bearer {server['key']}"})
    assert done.status_code == 200, done.text
    (run,) = pm.runs.list(ann.id, kind="consolidate")
    tab.evaluate(f"location.hash = '#/runs/{run.id}'")  # within the app: its open requests end as it leaves them
    tab.wait_for_selector("#answer:has-text('Memory consolidated')")
    assert "Memory consolidated" in tab.inner_text("#answer") and "read 2 messages" in tab.inner_text("#answer")
    assert "consolidate the memory of sam" in tab.inner_text(".run-title")
    # a later turn's page lists what recall-before-reply placed ahead of its first step (issue 50)
    again = httpx.post(f"{server['url']}/v1/agents/{agent_id}/messages", timeout=30, json={"message": "Am I Ann?"},
                       headers={"Authorization": f"Bearer {server['key']}"})
    assert again.status_code == 200, again.text
    tab.evaluate(f"location.hash = '#/runs/{again.json()['run_id']}'")
    tab.wait_for_selector("#recalled li")
    assert "Hello, I am Ann" in tab.inner_text("#recalled") and "message" in tab.inner_text("#recalled li")
    # a question: answered from what was recalled, one step the page shows with its reasoning
    tab.wait_for_selector("#answer:has-text('you told me your name is Ann')")
    assert "Answered from what recall placed in context" in tab.inner_text("#steps")
    assert not tab.problems, tab.problems


@pytest.mark.parametrize("auth", ["none"])
def test_without_keys_no_sign_in_and_memwalker_s_walk_on_its_tree(server, page, shoot):
    tab = page
    pm = server["pm"]
    user = pm.store.get_user("local")
    doc = pm.add_document(make_text(8, 30), "notes/../../etc/passwd", user_id=user.id)
    answer = pm.ask(pm.open_document(doc.id, user_id=user.id), "Where is the map?", method="memwalker",
                    user_id=user.id, segment_tokens=60, max_children=2)
    walk = answer.details["trajectory"]
    assert [s["action"] for s in walk if s["kind"] == "leaf"] == [-1, -2]

    # the first event stream breaks after two steps (CRLF line ends); the viewer reconnects with Last-Event-ID
    steps = pm.runs.steps(answer.run_id)
    streams = []

    def events(route):
        streams.append(route.request.headers.get("last-event-id"))
        if len(streams) > 1:
            return route.continue_()
        body = "".join(f"id: {s.seq}\r\nevent: {s.kind}\r\ndata: " + json.dumps(
            {"seq": s.seq, "kind": s.kind, "data": s.data, "created": s.created}) + "\r\n\r\n" for s in steps[:2])
        route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=": keep-alive\r\n\r\n" + body)

    tab.route("**/v1/runs/*/events", events)
    tab.goto(server["url"] + f"/#/runs/{answer.run_id}")
    tab.wait_for_selector("#tree svg")
    assert streams == [None, str(steps[1].seq)]
    shown = tab.locator("#steps li.step").evaluate_all("els => els.map(e => Number(e.dataset.seq))")
    assert len(shown) == len(set(shown)) and shown[0] == steps[0].seq and shown[-1] == steps[-1].seq
    assert tab.locator("form.signin").count() == 0 and tab.locator("#who .user").inner_text() == "local"
    visited = tab.locator("#tree g.node.visited, #tree g.node.rejected, #tree g.node.answered").evaluate_all(
        "els => els.map(e => e.dataset.node)")
    assert sorted(visited) == sorted({s["node"] for s in walk})
    assert tab.locator("#tree g.node.answered").get_attribute("data-node") == walk[-1]["node"]
    memory = pm.runs.get(answer.run_id, user.id).result["memory"]
    assert tab.locator("#tree g.node").count() == len(pm.store.items(memory, "node"))
    numbers = tab.locator("#tree .walk-no").evaluate_all("els => els.flatMap(e => e.dataset.steps.split(' '))")
    assert sorted(map(int, numbers)) == list(range(1, len(walk) + 1))
    assert "notes/../../etc/passwd" in tab.inner_text(".page-head")
    shoot(tab, "9-memwalker-run")
    tab.set_viewport_size({"width": 400, "height": 800})
    shoot(tab, "10-memwalker-run-narrow")
    tab.set_viewport_size({"width": 1280, "height": 860})
    tab.emulate_media(color_scheme="dark")
    shoot(tab, "11-memwalker-run-dark")
    tab.emulate_media(color_scheme="light")

    tab.click("#nav a[data-section=documents]")
    tab.wait_for_selector("#documents")
    assert tab.inner_text("#documents a.docname") == "notes/../../etc/passwd"
    assert not tab.problems, tab.problems


@pytest.mark.parametrize("auth", ["none"])
def test_an_answer_s_markers_open_its_cited_spans_highlighted_in_place(server, page, shoot):
    from pagemind.citations import cite

    tab = page
    pm = server["pm"]
    user = pm.store.get_user("local")
    story = ("Wren keeps the lamps of the tower.\n\nThe map was found under the third stair by Wren in the winter "
             "of the storm. She hid it in the lamp room.\n\nAbel sails the ferry.")
    doc = pm.add_document(story, "cape.txt", user_id=user.id)
    document = pm.open_document(doc.id, user_id=user.id)
    answer = pm.ask(document, "Where is the map?", method="full", user_id=user.id)
    citations = [cite(document, "page", 0, s, "page") for s in ("under the third stair", "Abel sails the ferry.")]
    run = pm.runs.get(answer.run_id, user.id)
    pm.store.update_run(answer.run_id, result={**run.result, "citations": [c.as_dict() for c in citations]})

    tab.goto(server["url"] + f"/#/runs/{answer.run_id}")
    tab.wait_for_selector("#answer .answer a.marker")
    assert tab.locator("#answer .answer a.marker").all_inner_texts() == ["[1]", "[2]"]
    assert "under the third stair" in tab.inner_text("#answer .sources-list li:nth-child(1)")
    tab.click("#answer .answer a.marker[data-n='1']")
    tab.wait_for_selector("#cited mark.current")
    assert tab.inner_text("#cited mark.current") == "under the third stair"
    assert "The map was found" in tab.inner_text("#cited .cited-text")  # its paragraph around it
    assert "Abel" not in tab.inner_text("#cited .cited-text")  # another paragraph: not shown
    shoot(tab, "12-cited-span")
    tab.click("#answer .sources-list a.marker[data-n='2']")
    tab.wait_for_function("document.querySelector('#cited mark.current')?.textContent === 'Abel sails the ferry.'")
    # the answer's support: its line and each claim marked (issue 38)
    assert tab.inner_text("#support .support-line").startswith("supported by [1]")
    assert tab.locator("#support li.claim-supported").all_inner_texts()[0].startswith("✓ the map is under the stairs")
    other = pm.add_document("Abel sails the ferry to the island every week.", "ferry.txt", user_id=user.id)
    gone = pm.ask(pm.open_document(other.id, user_id=user.id), "Where is the map?", method="full", user_id=user.id)
    tab.goto(server["url"] + f"/#/runs/{gone.run_id}")
    tab.wait_for_selector("#support .draft")
    assert tab.inner_text("#answer .answer").startswith("The document does not say")
    assert "the map is under the stairs" in tab.inner_text("#support .draft")
    assert tab.inner_text("#support .support-line").startswith("abstained: not supported by the sources")
    shoot(tab, "13-abstained")
    assert not tab.problems, tab.problems


@pytest.mark.parametrize("auth", ["none"])
def test_a_library_is_made_asked_and_its_citation_opens_in_the_document_it_names(server, page, shoot):
    tab = page
    tab.goto(server["url"] + "/#/libraries")
    tab.wait_for_selector("#library-upload")
    tab.wait_for_selector("main:has-text('No libraries yet')")  # the list is "Loading…" until the server answers
    tab.fill("#library-name", "cape")
    tab.fill("#library-upload-name", "lamps.txt")
    tab.fill("#library-upload-text", "Wren keeps the lamps of the tower.\n\nAbel sails the ferry across the sound.")
    tab.click("#library-upload button[type=submit]")
    tab.wait_for_selector("#libraries a.docname")
    tab.set_input_files("#library-upload-file", files=[{"name": "map.md", "mimeType": "text/markdown", "buffer": (
        b"# The map\n\nThe map is under the stairs of the lighthouse, where Wren hid it.\n\nNobody else knew.")}])
    tab.fill("#library-name", "cape")
    tab.click("#library-upload button[type=submit]")
    tab.wait_for_function("document.querySelector('#libraries td.num')?.textContent === '2'")
    tab.click("#libraries a.docname")
    tab.wait_for_selector("#library-documents")
    assert tab.locator("#library-documents td.docname").all_inner_texts() == ["lamps.txt", "map.md"]
    shoot(tab, "13-library")
    tab.fill("#question", "Where is the map?")
    tab.select_option("#method", "full")
    tab.click("#ask")
    tab.wait_for_selector("#answer .answer a.marker")
    assert "library cape" in tab.inner_text(".page-head .facts")
    first = tab.inner_text("#answer .sources-list li:nth-child(1)")
    assert first.startswith("[1] map.md, ") and "under the stairs" in first
    tab.click("#answer .answer a.marker[data-n='1']")
    tab.wait_for_selector("#cited mark.current")
    assert "map.md" in tab.inner_text("#cited .cited-head")
    assert "under the stairs" in tab.inner_text("#cited mark.current")
    shoot(tab, "14-library-cited")
    tab.goto(server["url"] + "/#/libraries/cape")
    tab.wait_for_selector("#library-documents")
    tab.locator("#library-documents tr", has_text="lamps.txt").locator("button").click()
    tab.wait_for_function("document.querySelectorAll('#library-documents tbody tr').length === 1")
    assert not tab.problems, tab.problems
