"""Code retrieval, reader side, with the scripted fake: RepoCoder's prompt to the character, no leakage of the
lines being completed, budgets to the token, the stored fragments, reply extraction and the CLI."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("scipy")  # the `retrieval` extra
pytest.importorskip("tree_sitter_python")

from pagemind import Pagemind, ScriptedLLM, Store
from pagemind.cli import main as cli_main
from pagemind.errors import ConfigError, InputError
from pagemind.methods.code import CodeOptions, CodeReader, parse_target
from pagemind.retrieval.fragrel.code_rank import CodeSearchSettings, rank_code
from pagemind.retrieval.fragrel.repocoder import extract_completion
from pagemind.retrieval.scorers import BM25

SEP = "# " + "-" * 50
MAIN = ("from pkg.alpha import alpha_total\nfrom pkg.beta import beta_scale\n\n\ndef run(values):\n"
        "    scaled = beta_scale(values, 2)\n    total = alpha_total(scaled)\n    return total\n")
SMALL = {"pkg/alpha.py": "def alpha_total(values):\n    return sum(values)\n",
         "pkg/beta.py": "def beta_scale(values, factor):\n    return [v * factor for v in values]\n",
         "pkg/limit_a.py": "LIMIT = 10\n", "pkg/limit_b.py": "LIMIT = 10\n", "pkg/main.py": MAIN}


def write(root, files):
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text)
    return root


def session(fake=None):
    fake = fake or ScriptedLLM(by_role={"complete": "    total = alpha_total(scaled)\n    return total\n",
                                        "answer": "alpha_total sums the values."})
    return Pagemind(fake, store=Store(":memory:")), fake


# --- the prompt -----------------------------------------------------------------------------------------
def test_repocoder_prompt_layout_exactly(tmp_path):
    root = write(tmp_path, SMALL)
    pm, fake = session()
    done = pm.complete(root, "pkg/main.py", 7, fragrel=False, top_k=3)
    assert [f["paths"] for f in done.fragments] == [["pkg/alpha.py"], ["pkg/beta.py"], ["pkg/limit_a.py",
                                                                                       "pkg/limit_b.py"]]
    expected = "\n".join([
        "# Here are some relevant code fragments from other files of the repo:", SEP,
        "# the below code fragment can be found in:", "# pkg/limit_a.py", "# pkg/limit_b.py", SEP,  # merged copies
        "# LIMIT = 10", SEP,
        "# the below code fragment can be found in:", "# pkg/beta.py", SEP,
        "# def beta_scale(values, factor):", "#     return [v * factor for v in values]", SEP,
        "# the below code fragment can be found in:", "# pkg/alpha.py", SEP,  # the best block is the last
        "# def alpha_total(values):", "#     return sum(values)", SEP,
        "",  # RepoCoder's '\n' between the context and the file
        "from pkg.alpha import alpha_total", "from pkg.beta import beta_scale", "", "", "def run(values):",
        "    scaled = beta_scale(values, 2)", ""])
    assert done.prompt == expected
    request = fake.history[-1]
    assert [m.role for m in request.messages] == ["system", "user"] and request.messages[1].content == expected
    assert "continue the file" in request.messages[0].content.lower() and request.role == "complete"
    assert done.text == "    total = alpha_total(scaled)\n    return total"
    assert done.details["query"] == "\n".join(MAIN.splitlines()[:6])  # the lines above the hole


def test_prompt_only_calls_no_model(tmp_path):
    pm, fake = session()
    done = pm.complete(write(tmp_path, SMALL), "pkg/main.py", 7, prompt_only=True)
    assert fake.history == [] and done.reply is None and done.prompt.endswith("beta_scale(values, 2)\n")


# --- no leakage -------------------------------------------------------------------------------------------
APP = "".join(["from pkg.alpha import alpha_total\n"] + [f"values_{i} = alpha_total([{i}])\n" for i in range(23)]
              + ["MARK_HOLE = secret_helper(values_1)\n"]  # line 25: the line to complete
              + [f"MARK_BELOW_{i} = alpha_total(values_{i})\n" for i in range(15)])


def test_no_leakage_of_the_completed_lines(tmp_path):
    root = write(tmp_path, {**SMALL, "pkg/app.py": APP,
                            "pkg/secret.py": "def secret_helper(v):\n    return v * 2\n"})
    pm, fake = session()
    reader = CodeReader(pm.llm, pm.store, top_k=10, budget=100000, file_budget=20)
    index = reader.build(root)
    done = reader.complete(index, index.tree.file("pkg/app.py").text, "pkg/app.py", 25)
    assert "MARK_HOLE" not in done.prompt and "MARK_BELOW" not in done.prompt
    assert "MARK" not in fake.history[-1].prompt_text()
    assert done.prompt.endswith("values_22 = alpha_total([22])\n") and done.code_tokens <= 20
    app_shown = [f for f in done.fragments if f["paths"] == ["pkg/app.py"]]
    assert app_shown and all(f["end"] <= 24 for f in app_shown)  # windows above the hole may be shown
    assert done.details["excluded"] == sum(1 for f in index.fragments if f.source == "pkg/app.py" and f.end > 24)
    repo = index.repo
    # the graph: the call in the hole line links to secret_helper in the full graph, not in the query's view
    def call_edges(v):
        return {(repo.node_label(int(a)), repo.node_label(int(b))) for a, b, w in zip(v.u, v.v, v.w) if w == 0.8}

    hole_call = ("pkg/app.py:call@25", "pkg/secret.py:function_definition@1")
    assert hole_call in call_edges(repo.view())
    view = repo.view(("pkg/app.py", 24))
    assert hole_call not in call_edges(view)
    assert not any(a.startswith("pkg/app.py:") and int(a.rsplit("@", 1)[1]) >= 25
                   for a, _ in call_edges(view))
    # BM25 statistics come from the allowed windows only
    query = done.details["query"]
    ranking = rank_code(repo, query, CodeSearchSettings(fragrel=False), hole=("pkg/app.py", 24))
    allowed = np.flatnonzero(~view.excluded)
    expected = BM25([index.fragments[i].text for i in allowed]).scores(query)
    assert ranking.s_ind[allowed] == pytest.approx(expected)
    assert not np.allclose(rank_code(repo, query, CodeSearchSettings(fragrel=False)).s_ind[allowed], expected)
    assert np.isneginf(ranking.s_ind[view.excluded]).all()


# --- budgets to the token -------------------------------------------------------------------------------
# scripted tokens are whitespace words: header 13 + separator 2 = 15; each block below is
# "# the below code fragment can be found in:" 9 + "# pkg/one.py" 2 + 2 + "# x = 1" 4 + 2 = 19
BUDGET_REPO = {"pkg/one.py": "x = 1\n", "pkg/two.py": "y = 2\n", "pkg/cur.py": "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n"}


@pytest.mark.parametrize("budget, blocks, tokens", [(53, 2, 53), (52, 1, 34), (34, 1, 34), (33, 0, 15),
                                                    (15, 0, 15), (14, None, 0)])
def test_retrieved_context_fits_the_budget_to_the_token(tmp_path, budget, blocks, tokens):
    pm, _ = session()
    done = pm.complete(write(tmp_path, BUDGET_REPO), "pkg/cur.py", None, prompt_only=True, budget=budget,
                         fragrel=False)
    assert done.context_tokens == tokens <= budget
    if blocks is None:  # not even the header fits: the file alone
        assert done.prompt == BUDGET_REPO["pkg/cur.py"] and done.fragments == ()
        assert any("header alone" in n for n in done.notes)
    else:
        assert len(done.fragments) == blocks == done.prompt.count("# the below code fragment can be found in:")
        assert done.prompt.startswith("# Here are some relevant code fragments")


def test_file_part_keeps_the_last_lines_that_fit(tmp_path):
    pm, _ = session()
    done = pm.complete(write(tmp_path, BUDGET_REPO), "pkg/cur.py", 6, prompt_only=True, file_budget=7)
    assert done.code_tokens == 6 and done.prompt.endswith("\nd = 4\ne = 5\n")  # 3 tokens a line: 2 lines fit
    assert any("last 2 of 5 lines" in n for n in done.notes)


def test_ask_context_fits_the_budget(tmp_path):
    pm, fake = session()
    answer = pm.ask_code(write(tmp_path, SMALL), "What does alpha_total return?", budget=30)
    assert answer.text == "alpha_total sums the values." and answer.method == "code"
    assert 0 < answer.details["context_tokens"] <= 30
    prompt = fake.history[-1].messages[0].content
    assert "# pkg/alpha.py (lines 1-2)\ndef alpha_total(values):" in prompt
    assert prompt.index("pkg/alpha.py") < prompt.index("Question:\nWhat does alpha_total return?")
    assert answer.pages_read == [f["index"] for f in answer.details["fragments"]]


def test_a_directory_is_read_by_the_code_method_only_never_switched_to_it(tmp_path):
    from pagemind.text import Document

    pm, fake = session()
    root = write(tmp_path, SMALL)
    for method in ("auto", "readagent-p", "full"):  # a document method refuses a source tree, naming the code method
        with pytest.raises(InputError, match=r"is a directory: .* holds no document files; .*ask_code"):
            pm.ask(root, "What does alpha_total return?", method=method)
    assert fake.history == []  # nothing was asked of the model
    assert pm.ask(root, "What does alpha_total return?", method="code").method == "code"  # explicit: read
    with pytest.raises(InputError, match="reads a source tree"):
        pm.ask(Document.from_text("alpha beta gamma."), "What?", method="code")


# --- memory, options, targets ---------------------------------------------------------------------------
def test_fragments_are_stored_content_addressed(tmp_path):
    root = write(tmp_path, SMALL)
    pm, _ = session()
    reader = CodeReader(pm.llm, pm.store)
    first = reader.build(root)
    assert pm.store.get_memory(first.key).status == "complete"
    assert len(pm.store.items(first.key, "fragment")) == len(first.fragments) == 5
    again = reader.build(root)
    assert again.key == first.key and [f.text for f in again.fragments] == [f.text for f in first.fragments]
    (root / "pkg" / "alpha.py").write_text("def alpha_total(values):\n    return 0\n")
    assert reader.build(root).key != first.key


def test_options_and_targets_are_validated(tmp_path):
    for bad in ({"top_k": 0}, {"budget": 0}, {"scorer": "dense"}, {"alpha": -1.0}, {"nonsense": 1}):
        with pytest.raises(ConfigError):
            CodeOptions.create(**bad)
    assert parse_target("pkg/a.py:12") == ("pkg/a.py", 12) and parse_target("pkg/a.py") == ("pkg/a.py", None)
    with pytest.raises(InputError, match="LINE must be a positive number"):
        parse_target("pkg/a.py:x")
    pm, _ = session()
    root = write(tmp_path, SMALL)
    with pytest.raises(InputError, match="has 8 lines"):
        pm.complete(root, "pkg/main.py", 10)
    with pytest.raises(InputError, match="no such file"):
        pm.complete(root, "pkg/missing.py", 1)
    outside = tmp_path.parent / "outside_latin.py"
    outside.write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    with pytest.raises(InputError, match="not valid UTF-8"):
        pm.complete(root, str(outside), 1)


# --- reading the reply ----------------------------------------------------------------------------------
@pytest.mark.parametrize("reply, expected", [
    ("```python\n    y = f(x)\n    return y\n```\nThis adds.", "    y = f(x)\n    return y"),  # Markdown block
    ("    x = g()\n    y = f(x)\n    return y", "    y = f(x)\n    return y"),  # echo of the last given line
    ("    y = f(x)\n\n    z = 2", "    y = f(x)"),  # a blank line ends it
    ("    y = f(x)\n    return y\ndef other():", "    y = f(x)\n    return y"),  # a dedent ends it
    ("    if y:\n        return 1\n    return 2", "    if y:\n        return 1\n    return 2"),  # deeper is fine
    ("\n\n    a = 1\n    b = 2\n    c = 3", "    a = 1\n    b = 2"),  # leading blanks dropped; max_lines 2
])
def test_extract_completion(reply, expected):
    text, _ = extract_completion(reply, ["def h(x):", "    x = g()"], max_lines=2 if "c = 3" in reply else 8)
    assert text == expected


def test_a_reply_cut_by_the_token_limit_loses_its_partial_line():
    reply = '    return {\n        "key": key,\n        "sett'
    assert extract_completion(reply, [], 8, truncated=True)[0] == '    return {\n        "key": key,'
    assert extract_completion(reply, [], 8)[0].endswith('"sett')
    assert extract_completion("    x = 1", [], 8, truncated=True)[0] == "    x = 1"  # the only line stays


# --- the CLI --------------------------------------------------------------------------------------------
def run(args, fake=None, command=None):
    """``pagemind complete ARGS`` through the real command group (or ``command`` with ARGS as given)."""
    fake = fake or ScriptedLLM(by_role={"complete": "    total = alpha_total(scaled)\n",
                                        "answer": "It returns sum(values)."})
    if command is None:
        command, args = cli_main.cli, ["complete", *args]
    return CliRunner().invoke(command, args, obj={"backend": fake}), fake


def test_cli_complete(tmp_path):
    root = write(tmp_path / "repo", SMALL)
    store = str(tmp_path / "s.db")
    result, _ = run([str(root), "pkg/main.py:7", "--store", store, "--top-k", "2", "--trace"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "    total = alpha_total(scaled)\n"
    assert "pkg/main.py:7 | 2 fragments" in result.stderr and "fragment 0: pkg/alpha.py lines 1-2" in result.stderr
    shown, _ = run([str(root), str(root / "pkg" / "main.py") + ":7", "--store", store, "--prompt-only",
                    "--no-fragrel", "--scorer", "jaccard"])
    assert shown.exit_code == 0 and shown.stdout.startswith("# Here are some relevant code fragments")
    data, _ = run([str(root), "pkg/main.py:7", "--store", store, "--json"])
    parsed = json.loads(data.stdout)
    assert parsed["text"] == "    total = alpha_total(scaled)" and parsed["line"] == 7 and parsed["usage"]["calls"] == 1


def test_cli_bad_inputs_are_one_line_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    binary = write(tmp_path / "bin", {"x.py": b"\x00\x01"})
    repo = write(tmp_path / "repo", SMALL)
    cases = [([str(empty), "a.py:1"], "no readable source files"), ([str(binary), "x.py:1"], "binary"),
             ([str(tmp_path / "nope"), "a.py:1"], "no such directory"),
             ([str(repo), "pkg/main.py:99"], "has 8 lines"), ([str(repo), "pkg/zzz.py:1"], "no such file")]
    for args, message in cases:
        result, fake = run(args + ["--store", str(tmp_path / "s.db")])
        assert result.exit_code == 1, (args, result.output)
        assert result.stderr.startswith("error:") and message in result.stderr and "Traceback" not in result.output
        assert fake.history == []
    # a flag value its declaration refuses is a usage error, before anything is read
    result, fake = run([str(repo), "pkg/main.py:2", "--alpha", "-1", "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 2 and "alpha must be at least 0" in result.output and fake.history == []


def test_ask_directory_dispatch(tmp_path):
    root = write(tmp_path / "repo", SMALL)
    store = ["--store", str(tmp_path / "s.db")]
    ask = ["ask", str(root)]
    result, fake = run(ask + ["What does alpha_total do?", "--top-k", "1", "--budget", "200"] + store,
                       command=cli_main.cli)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("It returns sum(values). [1]") and "[code] fragments read:" in result.stderr
    assert "\nSupport: supported by [1]" in result.stdout  # the source's line holds what the answer says
    assert fake.history[-1].messages[0].content.count("# pkg/") == 1  # --top-k 1
    on, _ = run(ask + ["q?", "--json"] + store, command=cli_main.cli)
    off, _ = run(ask + ["q?", "--json", "--no-fragrel"] + store, command=cli_main.cli)
    assert json.loads(on.stdout)["details"]["options"]["fragrel"] is True
    assert json.loads(off.stdout)["details"]["options"]["fragrel"] is False
    for bad in (["--keep", "left"], ["--scorer", "dense"]):
        rejected, _ = run(ask + ["q?"] + bad + store, command=cli_main.cli)
        assert rejected.exit_code == 2, (bad, rejected.output)
        assert ("applies to full, not code" in rejected.output or "one of bm25, jaccard" in rejected.output), \
            rejected.output
    # a document method asked of a source tree reads it as a library of documents, and it holds none: refused
    rejected, fake = run(ask + ["q?", "--method", "rag"] + store, command=cli_main.cli)
    assert rejected.exit_code == 1 and "holds no document files" in rejected.output and "code method" in \
        rejected.output and fake.history == []


def test_a_prose_completion_is_reasked_once_then_returned_with_a_warning(tmp_path):
    root = write(tmp_path, SMALL)
    fixed = ScriptedLLM(replies=["The code is designed to add up the scaled values.",
                                 "    total = alpha_total(scaled)\n"])
    pm, _ = session(fixed)
    done = pm.complete(root, "pkg/main.py", 7)
    assert done.text == "    total = alpha_total(scaled)" and len(fixed.history) == 2
    assert fixed.history[1].messages[-1].content.startswith("Reply with the code that continues the file only")
    assert not any("warning" in n for n in done.notes)
    stubborn = ScriptedLLM(replies=["The code is designed to add up values.", "It sums them, as designed here."])
    pm, _ = session(stubborn)
    done = pm.complete(root, "pkg/main.py", 7)
    assert any(n.startswith("warning: the model's reply does not read as Python code") for n in done.notes)
    assert [e.decision for e in done.trace.events] == ["invalid (the reply is not Python code)"] * 2
