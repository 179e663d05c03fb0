"""The Reader contract: options declared once (validation, KEY=VALUE, JSON schema, CLI flags, memory key), the
re-ask primitive, and what every registered reader offers."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from helpers import make_text
from pagemind.cli.main import cli
from pagemind.errors import ConfigError
from pagemind.llm.base import LLMRequest
from pagemind.llm.client import LLM
from pagemind.llm.decide import BUDGET, FAILED, Invalid, decide
from pagemind.llm.fake import ScriptedLLM
from pagemind.llm.usage import Trace
from pagemind.methods import registry
from pagemind.methods.base import Chooser, Reader
from pagemind.methods.memwalker import MemWalkerOptions
from pagemind.methods.rag import RAGOptions
from pagemind.methods.readagent import ParallelOptions, ReadAgentOptions
from pagemind.store import Store
from pagemind.text import Document


# --- options, declared once ---------------------------------------------------------------------------
def test_presets_then_overrides_then_checks():
    opts = ParallelOptions.create("qmsum", max_words=700)
    assert (opts.preset, opts.max_pages, opts.previous_page, opts.max_words) == ("qmsum", 2, True, 700)
    assert opts.prompt_set == "qmsum"
    assert ParallelOptions.create().preset == "quality"  # the first preset is the default
    for bad, message in [({"max_pages": 0}, "max_pages must be at least 1"),
                         ({"expand": "sideways"}, "expand must be one of in-place, follow-up"),
                         ({"min_words": "many"}, "min_words takes a whole number"),
                         ({"budget": True}, "budget takes a whole number or none"),
                         ({"min_words": 700}, "min_words <= max_words"),
                         ({"preset": {}}, "preset takes the name of a preset"),  # JSON's {} is not "none"
                         ({"segment_tokens": 10}, r"unknown ReadAgent option\(s\): segment_tokens")]:
        with pytest.raises(ConfigError, match=message):
            ParallelOptions.create(**bad)
    with pytest.raises(ConfigError, match="unknown MemWalker preset 'qmsum'"):
        MemWalkerOptions.create("qmsum")


def test_key_value_strings_are_read_as_the_declared_type():
    assert ParallelOptions.coerce("max_pages", "3") == 3
    assert ParallelOptions.coerce("budget", "none") is None
    assert MemWalkerOptions.coerce("reasoning", "false") is False
    assert RAGOptions.coerce("alpha", "0.25") == 0.25
    with pytest.raises(ConfigError, match="reasoning takes true or false"):
        MemWalkerOptions.coerce("reasoning", "maybe")
    with pytest.raises(ConfigError, match="unknown RAG option 'nope'"):
        RAGOptions.coerce("nope", "1")


def test_the_memory_key_settings_are_the_ones_stores_already_hold():
    """Renaming or re-declaring an option must not orphan memories built before: the keys stay as they were."""
    assert set(ReadAgentOptions.create().memory_settings()) == {
        "preset", "min_words", "max_words", "tail_words", "previous_page", "lookahead", "gist_mode", "constrained",
        "max_tokens"}
    assert set(MemWalkerOptions.create().memory_settings()) == {"segment_tokens", "max_children", "node_tokens"}
    assert RAGOptions.create().memory_settings() == {"fragments": "words", "fragment_words": 500}
    # answer-time options do not change the memory: ReadAgent-P, -S and GistMem share one
    assert ParallelOptions.create(max_pages=1, expand="follow-up").memory_settings() == \
        ReadAgentOptions.create().memory_settings()


def test_json_schema_of_every_reader_describes_every_option():
    for cls in registry.all_readers():
        schema = cls.Options.json_schema()
        assert schema["additionalProperties"] is False
        assert set(schema["properties"]) == {s.name for s in cls.Options.specs()}
        for name, prop in schema["properties"].items():
            assert prop["description"] and prop["type"], (cls.name, name)
    props = ParallelOptions.json_schema()["properties"]
    assert props["expand"]["enum"] == ["in-place", "follow-up"] and props["max_pages"]["minimum"] == 1
    assert props["budget"]["type"] == ["integer", "null"] and props["preset"]["enum"][0] == "quality"


def test_every_registered_reader_follows_the_contract():
    for name in registry.names():
        cls = registry.get(name)
        assert issubclass(cls, Reader) != issubclass(cls, Chooser)  # a reader, or a choice resolved to one
        assert cls.name == name and cls.about.title and cls.about.summary
        assert cls.source in ("document", "directory") and cls.unit
    with pytest.raises(ConfigError, match="unknown method 'nope'"):
        registry.get("nope")


# --- the CLI is generated from the declarations ---------------------------------------------------------
def test_ask_help_lists_every_declared_option_in_sections_with_its_declared_default():
    text = CliRunner().invoke(cli, ["ask", "--help"], terminal_width=200).output
    for cls in registry.all_readers():
        for spec in cls.Options.specs():
            flag = spec.flag.split("/")[0] if spec.flag else "--" + spec.name.replace("_", "-")
            assert flag in text, flag
    assert "Options of auto:" in text and "Options of readagent-p, readagent-s:" in text and "Model and store:" in text
    line = " ".join(text.split("--max-pages", 1)[1].split("--", 1)[0].split())
    assert "[default 5 (qmsum: 2, narrativeqa-book: 3, narrativeqa-movie: 3)]" in line


def test_a_flag_of_another_method_is_a_usage_error_naming_who_takes_it(tmp_path):
    story = tmp_path / "s.txt"
    story.write_text(make_text(4, 20))
    result = CliRunner().invoke(cli, ["ask", str(story), "q?", "-m", "full", "--max-children", "3"],
                                obj={"backend": ScriptedLLM()})
    assert result.exit_code == 2 and "--max-children applies to memwalker, not full" in result.output


# --- the re-ask primitive -------------------------------------------------------------------------------
def number(reply: str) -> int | Invalid:
    return int(reply) if reply.strip().isdigit() else Invalid(f"{reply!r} is not a number")


def test_decide_reasks_with_the_correction_and_records_every_reading():
    fake = ScriptedLLM(replies=["seven", "still no", "7"])
    trace = Trace()
    found = decide(LLM(fake), LLMRequest.user("a number?"), number, trace, retries=2,
                   correction=lambda problem: f"{problem}. Digits only.", describe=lambda n: f"got {n}")
    assert found.value == 7 and found.calls == 3 and found.problems == ("'seven' is not a number",
                                                                        "'still no' is not a number")
    assert [e.decision for e in trace.events] == ["invalid ('seven' is not a number)",
                                                  "invalid ('still no' is not a number)", "got 7"]
    last = fake.history[-1].messages
    assert [m.role for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[-1].content == "'still no' is not a number. Digits only."


def test_decide_stops_after_its_retries_and_at_a_budget():
    found = decide(LLM(ScriptedLLM(replies=["x"] * 5)), LLMRequest.user("?"), number, Trace(), retries=1)
    assert found.value is None and found.outcome == FAILED and found.calls == 2
    budget = decide(LLM(ScriptedLLM(replies=["x"] * 5)), LLMRequest.user("?"), number, Trace(), retries=4,
                    may_call=lambda made: made < 3)
    assert budget.value is None and budget.outcome == BUDGET and budget.calls == 3


def test_decide_stops_re_asking_when_the_next_ask_would_not_fit_the_window():
    # each re-ask carries every reply before it: with room for two, a third is never sent (no ContextWindowExceeded)
    long_reply = "not a number " * 40
    fake = ScriptedLLM(replies=[long_reply] * 50, context_window=300)
    request = LLMRequest(messages=LLMRequest.user("?").messages, max_tokens=20)
    found = decide(LLM(fake), request, number, Trace(), retries=50)
    assert found.value is None and found.outcome == FAILED and 1 <= found.calls < 5
    assert found.problems[-1] == "no room left in the context window to ask again"
    assert all(LLM(fake).fits(sent) for sent in fake.history)


def test_absurd_retry_counts_are_refused_by_name():
    from pagemind.errors import ConfigError

    for method in ("rag", "full", "readagent-p"):
        with pytest.raises(ConfigError, match="max_retries must be at most 10"):
            registry.get(method).Options.create(max_retries=278449653407)


# --- the template ---------------------------------------------------------------------------------------
def test_answers_name_the_unit_they_read_and_full_text_reports_what_it_read():
    doc = Document.from_text(make_text(6, 20))
    fake = ScriptedLLM(by_role={"answer": "Answer: (B) two"})
    full = registry.get("full")(LLM(fake), Store(":memory:"))
    answer = full.answer(full.build(doc), _question())
    assert answer.read_unit == "text" and answer.details["words_read"] == doc.words
    assert answer.compression_rate == 0.0 and answer.letter == "B"


def _question():
    from pagemind.answering.question import Question

    return Question("Which?", ("one", "two", "three"))


def test_an_option_added_later_joins_the_memory_key_only_when_changed():
    """ReadAgent's pagination mode came after memories were stored: its default keeps their keys."""
    default = ReadAgentOptions.create()
    assert "pagination" not in default.memory_settings() and "chunk_words" not in default.memory_settings()
    chunked = ReadAgentOptions.create(pagination="chunked")
    assert chunked.memory_settings()["pagination"] == "chunked"
    assert chunked.memory_settings() != default.memory_settings()
