"""The CLI, driven with the scripted fake injected through click's context object."""

import json

from click.testing import CliRunner

from helpers import first_words_gist, make_text, middle_label
from pagemind import ScriptedLLM
from pagemind.cli.main import cli, sample_path


def run(args, fake=None, **kw):
    fake = fake or ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist,
                                        "lookup": "I want to look up Page [1] to", "answer": "Answer: (B) two"})
    return CliRunner().invoke(cli, args, obj={"backend": fake}, **kw), fake


def test_ask_multiple_choice_with_options_and_trace(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(30, 60))
    result, _ = run(["ask", str(book), "Which page?", "-o", "one", "-o", "two", "--trace", "-m", "readagent-p"])
    assert result.exit_code == 0, result.output
    assert "Answer: (B) two" in result.stdout
    assert "pages read: 1" in result.stderr
    assert "lookup" in result.stderr and "-> pages [1]" in result.stderr  # the trace shows decisions


def test_index_then_show_then_ask_reuses_memory(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(30, 60))
    result, fake = run(["index", str(book), "-m", "readagent-p"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["pages"] >= 3 and 0 < summary["compression_rate"] < 100
    shown, _ = run(["show", str(book), "-m", "readagent-p"], fake)
    assert "<Page 0>" in shown.stdout and "compression_rate" in shown.stdout
    calls = len(fake.history)
    asked, _ = run(["ask", str(book), "Which page?\n(A) one\n(B) two", "--json", "-m", "readagent-p"], fake)
    data = json.loads(asked.stdout)
    assert data["letter"] == "B" and data["choice"] == 1
    assert [r.role for r in fake.history[calls:]] == ["lookup", "answer"]


def test_show_without_memory_is_a_clear_error(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(30, 60))
    result, _ = run(["show", str(book), "-m", "readagent-p"])
    assert result.exit_code == 1
    assert "run `pagemind index` first" in result.stderr


def test_bad_inputs_exit_non_zero_with_one_line(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    binary = tmp_path / "b.bin"
    binary.write_bytes(bytes(range(256)) * 10)
    latin = tmp_path / "l.txt"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    for path in (empty, binary, latin, tmp_path, tmp_path / "missing.txt"):
        result, fake = run(["ask", str(path), "q?"])
        assert result.exit_code == 1, (path, result.output)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
        assert "Traceback" not in result.output
        assert fake.history == []
    big = tmp_path / "big.txt"
    big.write_bytes(b"word " * 250_000)
    result, _ = run(["ask", str(big), "q?", "--max-bytes", "1000000"])
    assert result.exit_code == 1 and "over the" in result.stderr


def test_sample_is_bundled_and_askable():
    assert sample_path().read_text().strip()
    result, _ = run(["ask", "--sample", "Who finds the map?"],
                       ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist,
                                            "lookup": "Page [0]", "answer": "Wren finds it."}))
    assert result.exit_code == 0, result.output
    assert "Wren finds it." in result.stdout


def test_unknown_llm_spec_is_a_config_error(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(5, 60))
    result = CliRunner().invoke(cli, ["ask", str(book), "q?", "--llm", "nonsense"])
    assert result.exit_code == 1 and "expected one of local:NAME" in result.stderr


def test_ask_through_an_openai_compatible_server(tmp_path):
    """The whole path over HTTP: CLI flags -> OpenAI-compatible backend -> a local mock server."""
    import re

    from pagemind.llm.mockserver import MockServer

    def reply(body):
        prompt = body["messages"][-1]["content"].lstrip()  # the published prompts begin with a blank line
        if prompt.startswith("You are given a passage"):
            found = re.findall(r"^<(\d+)>$", prompt, flags=re.MULTILINE)
            return f"Break point: <{found[0]}>"
        if prompt.startswith("Please shorten"):
            return "a gist"
        if "Which page(s)" in prompt:
            return "I want to look up Page [0] to check"
        return "Answer: (A) one"

    book = tmp_path / "book.txt"
    book.write_text(make_text(20, 60))
    with MockServer(text=reply) as server:
        result = CliRunner().invoke(cli, ["ask", str(book), "Which?", "-o", "one", "-o", "two", "--llm", "openai:mock",
                                          "--base-url", server.url, "--concurrency", "4", "--context-window", "8192"])
        assert result.exit_code == 0, result.output
        assert "Answer: (A) one" in result.stdout
        assert all(r["model"] == "mock" for r in server.requests)
        assert "authorization" not in server.headers[0]
    closed = CliRunner().invoke(cli, ["ask", str(book), "Which?", "--llm", "openai:mock", "--base-url", server.url,
                                      "--no-cache", "--context-window", "8192"], env={"PAGEMIND_MAX_RETRIES": "0"})
    print(closed.stderr)
    assert closed.exit_code == 1 and "error:" in closed.stderr and "Traceback" not in closed.output


def test_help_is_whole_and_encoding_is_offered_only_where_a_file_is_read():
    top = CliRunner().invoke(cli, ["--help"], terminal_width=80).output
    assert "..." not in top.split("Commands:")[1]  # no description is cut off
    assert "--encoding" not in CliRunner().invoke(cli, ["agent", "say", "--help"]).output
    assert "--encoding" in CliRunner().invoke(cli, ["ask", "--help"]).output
    assert "pagemind ask --long-sample" in CliRunner().invoke(cli, ["ask", "--help"]).output  # examples
