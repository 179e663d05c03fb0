"""A memory's identity (issue 22 item 3): which model built it, not where it is served; the version of its method's
build; and a read-only ask of a built memory writes nothing but its run (item 5)."""

from __future__ import annotations

import sqlite3

import pytest

from helpers import first_words_gist, make_text, middle_label
from pagemind.api import Pagemind
from pagemind.llm.client import LLM
from pagemind.llm.fake import ScriptedLLM
from pagemind.llm.local import gguf_identity
from pagemind.llm.openai import OpenAICompatible
from pagemind.llm.servers import discover
from pagemind.methods.memwalker import MemWalker
from pagemind.methods.readagent import ReadAgentP
from pagemind.store import Store, memory_key
from pagemind.text import Document

DOC = Document.from_text(make_text(30, 60))


def served_at(url: str, model: str = "qwen2.5-7b") -> LLM:
    """An OpenAI-compatible backend at ``url`` (kind and window declared: nothing is asked of a server)."""
    return LLM(OpenAICompatible(model, base_url=url, server_kind="openai", context_window=8192))


def test_the_same_model_at_two_base_urls_keys_the_same_memory(tmp_path):
    store = Store(tmp_path / "s.db")
    here, there = served_at("http://gpu-a:8000/v1"), served_at("http://10.0.0.7:9000/v1")
    assert here.model_id != there.model_id  # where it is served still names it (messages, the reply cache)
    assert here.model_identity == there.model_identity == "openai:qwen2.5-7b"
    assert ReadAgentP(here, store).memory_key(DOC) == ReadAgentP(there, store).memory_key(DOC)
    other = served_at("http://gpu-a:8000/v1", model="llama-3.1-8b")  # another model at the same place
    assert ReadAgentP(other, store).memory_key(DOC) != ReadAgentP(here, store).memory_key(DOC)
    store.close()


class Probe:
    """A llama.cpp server's answers to discovery: one model card (its file), whatever the request names."""

    base, root = "http://box:8080/v1", "http://box:8080"

    def __init__(self, card: str) -> None:
        self.card = card

    def get(self, path: str, *, base: bool = False):
        return {"data": [{"id": self.card, "owned_by": "llamacpp"}]} if path == "/models" else {}

    def post(self, path: str, body: dict, *, base: bool = False):
        return None


def test_a_server_that_serves_one_model_whatever_is_asked_is_known_by_the_model_it_reports():
    _, found = discover(Probe("/models/qwen2.5-7b-q4_k_m.gguf"), "anything", "llama.cpp", 4096)
    assert found.served == "/models/qwen2.5-7b-q4_k_m.gguf"
    _, other = discover(Probe("/models/llama-3.1-8b-q8_0.gguf"), "anything", "llama.cpp", 4096)
    assert other.served != found.served  # different weights behind the same requested name: another model
    backend = OpenAICompatible("anything", base_url="http://box:8080/v1", server_kind="llama.cpp", context_window=4096)
    backend._capabilities, backend.discovery = object(), found  # as discovery leaves them
    assert backend.model_identity == "openai:/models/qwen2.5-7b-q4_k_m.gguf"
    _, vllm = discover(None, "qwen2.5-7b", "openai", 4096)  # a server that routes by the name: the name
    assert vllm.served is None


def test_different_weights_are_another_model_and_moved_weights_the_same(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "m.gguf").write_bytes(b"GGUF" + b"\x01" * 4096)
    (tmp_path / "b" / "m.gguf").write_bytes(b"GGUF" + b"\x01" * 4096)  # the same weights in another folder
    (tmp_path / "m2.gguf").write_bytes(b"GGUF" + b"\x02" * 4096)
    same = gguf_identity(tmp_path / "a" / "m.gguf", "smol")
    assert same == gguf_identity(tmp_path / "b" / "m.gguf", "smol")
    assert same != gguf_identity(tmp_path / "m2.gguf", "smol")
    store = Store(tmp_path / "s.db")
    models = (same, gguf_identity(tmp_path / "b" / "m.gguf", "smol"), gguf_identity(tmp_path / "m2.gguf", "smol"))
    keys = {ReadAgentP(LLM(ScriptedLLM(model_id=m)), store).memory_key(DOC) for m in models}
    assert len(keys) == 2  # the moved copy shares its memory; other weights build their own
    store.close()


def test_a_builder_version_bump_changes_the_key_and_version_one_keeps_todays_keys(tmp_path):
    store = Store(tmp_path / "s.db")
    llm = LLM(ScriptedLLM())

    class Rebuilt(MemWalker):
        builder_version = 3

    sections = {"tree": "sections"}  # MemWalker's version counts for its tree of sections (2: rows kept, heads)
    assert Rebuilt(llm, store, **sections).memory_key(DOC) != MemWalker(llm, store, **sections).memory_key(DOC)
    assert Rebuilt(llm, store, **sections).key_settings()["builder"] == 3
    assert MemWalker(llm, store, **sections).key_settings()["builder"] == 2
    # the paper's tree is built as before: its key is today's whatever the version
    assert Rebuilt(llm, store).memory_key(DOC) == MemWalker(llm, store).memory_key(DOC)
    assert "builder" not in MemWalker(llm, store).key_settings()
    # Keys of memories stored before versions existed (computed with the code before them): unchanged at version 1,
    # and for ReadAgent's separate gists, whose build version 2 did not change.
    doc = Document.from_text("\n\n".join(" ".join(f"p{i}w{j}" for j in range(60)) + "." for i in range(30)))
    assert MemWalker(llm, store).memory_key(doc) == "02f5cbdca0936254136c1ad5a136c473bc76913f6694caeb7666f242b5b827ec"
    assert ReadAgentP(llm, store).memory_key(doc) == "8bb674bc58ae3c5683962614b72f996d37cf3272b1c9e574c8b7ea3a64d39816"
    # Continued gists are checked since ReadAgent's build version 2: such a memory names it, and is never one built
    # before the checks (no version in its key) nor one keyed by the old hand-written check version.
    continued = ReadAgentP(llm, store, gist_mode="continue")
    settings = continued.options.memory_settings()
    assert continued.key_settings() == {**settings, "builder": 2}
    assert continued.memory_key(doc) not in {memory_key(doc.id, "readagent", settings, "scripted"),
                                             memory_key(doc.id, "readagent", {**settings, "continued_gist_checks": 2},
                                                        "scripted")}
    store.close()


def connection(store) -> sqlite3.Connection:
    """The store's SQLite connection, wherever the store keeps it (it or an object it holds)."""
    for owner in (store, *vars(store).values()):
        for value in vars(owner).values() if hasattr(owner, "__dict__") else ():
            if isinstance(value, sqlite3.Connection):
                return value
    raise AssertionError(f"no SQLite connection in {store!r}")


def table_rows(path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


@pytest.mark.parametrize("method", ["readagent-p", "readagent-s", "memwalker", "rag", "auto"])
def test_a_read_only_ask_of_a_built_memory_writes_nothing_but_its_run(tmp_path, method):
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "summarise": "a summary",
                                "lookup": "I want to look up Page [0] to", "navigate": "Action: -1",
                                "answer": "Answer: (A) one"}, context_window=4096)
    doc = Document.from_text(make_text(60, 60))
    path = tmp_path / "s.db"
    with Pagemind(fake, store=path) as pm:
        pm.ask(doc, "Which?", options=["one", "two"], method=method)  # builds the memory, caches the replies
        before = table_rows(path)
        statements: list[str] = []
        db = connection(pm.store)  # every statement the ask sends
        db.set_trace_callback(statements.append)
        answer = pm.ask(doc, "Which?", options=["one", "two"], method=method)
        db.set_trace_callback(None)
        after = table_rows(path)
    assert answer.run_id is not None and not answer.index_trace
    changed = {t: (before[t], after[t]) for t in before if before[t] != after[t]}
    assert set(changed) <= {"runs", "run_steps"} and changed["runs"] == (before["runs"], before["runs"] + 1)
    writes = [" ".join(s.split())[:90] for s in statements
              if s.lstrip().split(" ", 1)[0].upper() in ("INSERT", "UPDATE", "DELETE", "REPLACE")]
    touched = {w.split(" INTO ")[-1].split(" ")[0] if " INTO " in w else w.split(" ")[1] if w.startswith("UPDATE")
               else w.split(" FROM ")[-1].split(" ")[0] for w in writes}
    assert touched <= {"runs", "run_steps", "leases"}, writes  # the run, its steps and its lease: nothing else
