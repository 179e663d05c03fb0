"""``auto``, the default method: the whole text when it fits with room to spare, ReadAgent-P beyond that."""

from __future__ import annotations

from click.testing import CliRunner

from helpers import first_words_gist, make_text, middle_label
from pagemind.api import Pagemind
from pagemind.cli.main import cli
from pagemind.llm.fake import ScriptedLLM
from pagemind.text import Document


def scripted(window: int) -> ScriptedLLM:
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist,
                                "lookup": "I want to look up Page [0] to", "answer": "Answer: (A) one"},
                       context_window=window)


def test_a_text_that_fits_is_read_whole_and_the_choice_is_stated(tmp_path):
    doc = Document.from_text(make_text(10, 60))  # 600 words
    fake = scripted(4096)
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        answer = pm.ask(doc, "Which?", options=["one", "two"])
    assert answer.method == "full" and answer.details["auto"]["method"] == "full"
    assert "fit the 4,096-token window with room to spare" in answer.details["auto"]["reason"]
    assert [r.role for r in fake.history] == ["answer"]  # nothing built: one call


def test_a_text_beyond_the_room_gets_a_gist_memory_and_a_look_up(tmp_path):
    doc = Document.from_text(make_text(60, 60))  # 3,600 words: more than 75% of 4,096 less the reserve
    fake = scripted(4096)
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        answer = pm.ask(doc, "Which?", options=["one", "two"])
        reader = pm.reader("auto")
        assert reader.choose(doc).method == "readagent-p"
        assert reader.load(doc).choice.method == "readagent-p"  # the stored memory is found again
    assert answer.method == "readagent-p" and answer.details["auto"]["method"] == "readagent-p"
    assert {r.role for r in fake.history} >= {"paginate", "gist", "lookup", "answer"}


def test_room_moves_the_threshold_and_explicit_methods_are_never_second_guessed(tmp_path):
    doc = Document.from_text(make_text(40, 60))  # 2,400 words
    with Pagemind(scripted(8192), store=tmp_path / "s.db") as pm:
        assert pm.reader("auto").choose(doc).method == "full"
        assert pm.reader("auto", room=0.8).choose(doc).method == "readagent-p"
        assert pm.reader("auto", budget=1000).choose(doc).method == "readagent-p"
        assert pm.ask(doc, "Which?", options=["one", "two"], method="gistmem").method == "gistmem"


def test_the_cli_says_what_auto_chose_and_json_stays_clean(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(10, 60))
    args = ["ask", str(book), "Which?", "-o", "one", "-o", "two", "--store", str(tmp_path / "s.db")]
    said = CliRunner().invoke(cli, args, obj={"backend": scripted(4096)})
    assert said.exit_code == 0, said.output
    assert said.stderr.startswith("auto: reading the whole text: 600 tokens fit the 4,096-token window")
    assert "[full] read 600 words of the text" in said.stderr
    quiet = CliRunner().invoke(cli, args + ["--json"], obj={"backend": scripted(4096)})
    assert quiet.exit_code == 0 and "auto:" not in quiet.stderr


def test_the_two_bundled_samples_fall_on_either_side_of_the_default_window(tmp_path):
    from pagemind.cli.main import sample_path

    short = Document.from_text(sample_path("short").read_text(encoding="utf-8"))
    long = Document.from_text(sample_path("long").read_text(encoding="utf-8"))
    with Pagemind(scripted(16384), store=tmp_path / "s.db") as pm:  # the default model's n_ctx
        assert pm.reader("auto").choose(short).method == "full"
        assert pm.reader("auto").choose(long).method == "readagent-p"
    assert 15_000 < long.words < 18_000
