"""Schemathesis against a real ``pagemind serve`` app under uvicorn on 127.0.0.1 (the scripted fake as its LLM):
every operation of the OpenAPI schema, every check (server errors, status codes, content types, headers and
bodies against the schema, negative and positive data, unsupported methods, Allow headers, ignored auth, and
object-level authorization with two users as peers), a bounded number of examples. Done when it finds nothing:
the schema describes the service and the service keeps to it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import first_words_gist, make_text, middle_label

pytest.importorskip("schemathesis")
pytest.importorskip("uvicorn")

from pagemind import Pagemind, ScriptedLLM
from pagemind import users as users_api
from pagemind.server.app import create_app
from test_mcp import Served

# Two users whose objects must stay private to each other. An upload's bytes are valid or not by their content
# (binary, empty, undecodable, over the limit), which no schema says: there 413, 415 and 422 are answers to valid
# requests too. Loading a document into an agent answers 422 for a document id in the body that is not the
# user's (another user's, or erased): the agent is there, what the body names is not. A method's
# options are checked against each other and against the model's window when its reader is made (min_words <=
# max_words; MemWalker's segments must fit the window): rules no JSON schema states, so a schema-valid index or ask
# may be a 422 that names them. The same holds for a library's upload, index and ask, and for a chat completion,
# which also answers 404 for a model, document or library that is not the user's and 422 for a conversation
# without a user message to answer. A core-memory edit names either a line to append or a text to replace, and the
# text to replace must be in the block: 422 otherwise. An agent's persona and human must fit its block limit, and
# its tool calling must be one the backend offers (the scripted fake has no native tools): 422 names the rule. A
# library's name is its user's: two users may each hold a library named alike, so one user's deleting theirs
# leaves the other's answering (not a use after free).
CONFIG = """
[auth.wfc]
path = "auth.json"
peers = ["ann", "bob"]

# an invalid body over the server's --max-body is refused as too large before it is parsed: a rejection too
[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]

[[operations]]
include-operation-id = ["add_document", "add_to_library"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "413", "415", "422"]

[[operations]]
include-operation-id = ["index_document", "ask_document", "index_library", "ask_library"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422"]

[[operations]]
include-operation-id = ["create_agent", "send_message"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422"]

[[operations]]
include-operation-id = ["delete_library", "remove_from_library"]
checks.use_after_free.enabled = false

[[operations]]
include-operation-id = "edit_block"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422"]

[[operations]]
include-operation-id = "chat_completions"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422"]

# The coverage phase walks every boundary of every property of a body: for the four requests that name a method and
# its options (one anyOf branch per method, ~60 options) that is ~10,600 cases, each a reader's run: the whole run
# took 136 s with them (all passed, 2026-11-28), 25 s without. Their boundaries are the declarations (the methods'),
# checked by one coercion in the service and walked bound by bound in tests/test_server_api.py; here the examples,
# fuzzing and stateful phases cover them. PAGEMIND_SCHEMATHESIS_PHASES and _EXAMPLES set a longer hunt.
[[operations]]
include-operation-id = ["index_document", "ask_document", "index_library", "ask_library"]
phases.coverage.enabled = false

[[operations]]
include-operation-id = "load_document"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422"]
"""
# examples per operation in the fuzzing phase: 8 in the suite's budget; a longer hunt sets the variables
EXAMPLES = int(os.environ.get("PAGEMIND_SCHEMATHESIS_EXAMPLES", "8"))
PHASES = os.environ.get("PAGEMIND_SCHEMATHESIS_PHASES", "examples,coverage,fuzzing,stateful")


def agent_step(request):
    return json.dumps({"thoughts": "t", "function": "send_message", "arguments": {"message": "noted"}})


def test_schemathesis_finds_nothing(tmp_path: Path) -> None:
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "answer": "Answer: the map",
                                "agent-step": agent_step, "summarise": "we talked", "lookup": "[]"},
                       default="Answer: A")
    with Pagemind(fake, store=tmp_path / "s.db", max_bytes=50_000) as pm:
        keys = {name: users_api.create_user(pm.store, name)[1] for name in ("ann", "bob")}
        app = create_app(pm, auth="keys", keepalive=0.2, workers=4, mcp=False)
        with Served(app) as served:
            for name, key in keys.items():  # each user has a document and an agent to find
                import httpx

                headers = {"Authorization": f"Bearer {key}"}
                doc = httpx.post(f"{served.url}/v1/documents", headers=headers,
                                 json={"name": f"{name}.txt", "text": make_text(6, 30)})
                assert doc.status_code == 201, doc.text
                agent = httpx.post(f"{served.url}/v1/agents", headers=headers,
                                   json={"name": f"{name}s-agent", "options": {"embedder": "none"}})
                assert agent.status_code == 201, agent.text
            auth = {"auth": [{"name": name, "fixedHeaders": [{"name": "Authorization", "value": f"Bearer {key}"}]}
                             for name, key in keys.items()]}
            (tmp_path / "auth.json").write_text(json.dumps(auth))
            (tmp_path / "schemathesis.toml").write_text(CONFIG)
            report = tmp_path / "report.json"
            command = [shutil.which("schemathesis") or "schemathesis", "--config-file",
                       str(tmp_path / "schemathesis.toml"), "run", f"{served.url}/openapi.json", "--checks", "all",
                       "--max-examples", str(EXAMPLES), "--seed", "21", "--workers", "1", "--no-color",
                       "--phases", PHASES, "--generation-database", "none",
                       "--request-timeout", "20", "--report", "json", "--report-json-path", str(report)]
            done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    assert report.exists(), output[-3000:]
    result = json.loads(report.read_text())
    assert result["complete"] and result["operations"]["tested"] == result["operations"]["total"] >= 30, result
    assert result["test_cases"]["generated"] >= 30 * EXAMPLES, result["test_cases"]  # it really ran
    assert not result["errors"] and not result["failures"] and done.returncode == 0, output[-12000:]
