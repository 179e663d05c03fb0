"""Prompt fidelity: every prompt marked verbatim is the published text, every other one says how it differs."""

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from pagemind.errors import ConfigError
from pagemind.prompts import Prompt, get_prompt, load_prompts, prompt_groups

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = json.loads((ROOT / "tests" / "data" / "published_prompts.json").read_text(encoding="utf-8"))["prompts"]
ALL = [(group, prompt) for group in prompt_groups() for prompt in load_prompts(group).values()]
VERBATIM = [(g, p) for g, p in ALL if p.verbatim]
READAGENT_KEYS = {"paginate", "gist", "lookup_parallel", "lookup_sequential", "answer_choice", "answer_free"}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ids(pairs):
    return [f"{g}:{p.name}" for g, p in pairs]


def test_every_group_has_prompts_and_every_prompt_a_source():
    assert {"readagent", "memwalker", "memgpt", "raters", "code", "eval"} <= set(prompt_groups())
    for group, prompt in ALL:
        assert prompt.source.strip() and prompt.role.strip(), f"{group}:{prompt.name}"


@pytest.mark.parametrize("group,prompt", VERBATIM, ids=ids(VERBATIM))
def test_verbatim_prompt_is_the_published_text(group, prompt):
    record = PUBLISHED.get(group, {}).get(prompt.name)
    assert record, f"{group}:{prompt.name} is marked verbatim but tests/data/published_prompts.json has no text for it"
    if "published" in record:  # papers and code: the text itself is kept, so a failure shows the difference
        assert prompt.published_form() == record["published"]
    assert sha256(prompt.published_form()) == record["sha256"]
    # its variables are the published placeholders renamed, or published literals made variables
    assert prompt.variables <= set(prompt.placeholders.values()) | set(prompt.published_values)


def test_recorded_texts_name_existing_prompts_and_match_their_hashes():
    for group, records in PUBLISHED.items():
        for name, record in records.items():
            prompt = get_prompt(group, name)
            if "published" in record:
                assert sha256(record["published"]) == record["sha256"], f"{group}:{name}"
            if not prompt.verbatim:  # equal to the published text, yet not marked verbatim: mark it
                assert sha256(prompt.published_form()) != record["sha256"], f"{group}:{name}"
                assert prompt.differences, f"{group}:{name}"


@pytest.mark.parametrize("group,prompt", [(g, p) for g, p in ALL if not p.verbatim],
                         ids=ids([(g, p) for g, p in ALL if not p.verbatim]))
def test_a_prompt_adapted_from_a_published_one_says_how_it_differs(group, prompt):
    assert prompt.own or len(prompt.differences) > 20, (
        f"{group}:{prompt.name} comes from {prompt.source!r} but states no differences")


def test_the_known_defects_are_fixed():
    lookup = get_prompt("readagent", "quality.lookup_parallel")
    assert "if your would like to only read Page 8" in lookup.template and "your only need" not in lookup.template
    qmsum = get_prompt("readagent", "qmsum.lookup_parallel")
    assert qmsum.verbatim and "Which page(s) would you like to look up?" in qmsum.template
    for name in ("quality.gist", "quality.answer_choice", "qmsum.answer_free"):  # the leading newline is kept
        assert get_prompt("readagent", name).template.startswith("\n")
    assert get_prompt("readagent", "quality.paginate").template.endswith("{{ end_tag }}\n\n")
    assert not get_prompt("memwalker", "triage").verbatim and not get_prompt("raters", "strict").verbatim


@pytest.mark.parametrize("prompt_set", ["quality", "qmsum", "narrativeqa", "narrativeqa_movie"])
def test_every_readagent_prompt_set_has_every_step(prompt_set):
    names = {n.split(".", 1)[1] for n in load_prompts("readagent") if n.startswith(prompt_set + ".")}
    assert names == READAGENT_KEYS


def test_narrativeqa_uses_its_own_published_prompts():
    book = get_prompt("readagent", "narrativeqa.paginate").render(preceding="", passage="P\n<3>", end_tag="")
    assert "Please choose one label that marks a major section break point." in book
    assert 'answer with "Breakpoint: <57> ..."' in book
    lookup = get_prompt("readagent", "narrativeqa.lookup_parallel")
    assert lookup.render(gists="G", question="Q?", options="", max_pages=3).endswith("Question:\nQ?\n\n")
    assert "in the order of importance" in lookup.template


def test_a_page_count_the_paper_varied_is_a_variable_with_the_published_value():
    lookup = get_prompt("readagent", "quality.lookup_parallel")
    assert "You may read 1 to 5 page(s)" in lookup.published_form()
    assert "You may read 1 to 3 page(s)" in lookup.render(gists="G", question="Q", options="(A) a", max_pages=3)
    qmsum = get_prompt("readagent", "qmsum.lookup_parallel").render(gists="G", question="Q", options="(A) a",
                                                                    max_pages=4)
    assert "1 or 4 pages" in qmsum and "no more than 4 pages" in qmsum


def test_ignored_values_are_accepted_but_not_shown_and_others_still_rejected():
    sequential = get_prompt("readagent", "qmsum.lookup_sequential")
    text = sequential.render(gists="G", question="Q?", options="(A) alpha", past_pages="None")
    assert "(A) alpha" not in text
    assert text.endswith("Question:\nQ?\n\nSpecify a SINGLE page to read again, or say STOP:\n")
    with pytest.raises(ConfigError, match="unexpected"):
        sequential.render(gists="G", question="Q?", options="", past_pages="None", max_pages=2)
    with pytest.raises(ConfigError, match="missing"):
        get_prompt("readagent", "quality.lookup_sequential").render(gists="G", question="Q?", past_pages="None")


def test_a_prompt_cannot_ignore_a_variable_it_shows():
    from pagemind.prompts import _prompt

    entry = {"role": "answer", "source": "pagemind: test", "template": "{{ a }}", "ignores": ["a"]}
    with pytest.raises(ConfigError):
        _prompt("test", "x", entry)
    with pytest.raises(ConfigError, match="unknown fields"):
        _prompt("test", "x", {"role": "answer", "source": "pagemind: test", "template": "x", "verbatim_": True})
    assert Prompt("x", "answer", "{{ n }} pages", "s", True, published_values={"n": "5"}).published_form() == "5 pages"


# --- the maintainer's script, on a small notebook made here (the real one is not shipped) ------------------
def load_script():
    path = ROOT / "scripts" / "check_prompts_against_notebook.py"
    spec = importlib.util.spec_from_file_location("check_prompts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def notebook_with(gist_template: str) -> dict:
    cell = ('# @title The prompts we used for QuALITY with PaLM 2-L\n\n'
            f'gisting_prompt_template = {gist_template!r}\n# page_text: a page of text\n')
    return {"cells": [{"cell_type": "markdown", "source": ["# Prompts"]},
                      {"cell_type": "code", "source": ["!pip install x\n"]},
                      {"cell_type": "code", "source": cell.splitlines(keepends=True)}]}


def test_the_script_finds_a_one_character_difference(tmp_path, capsys):
    script = load_script()
    published = get_prompt("readagent", "quality.gist").template.replace("{{ page }}", "{page_text}")
    data = tmp_path / "published.json"
    data.write_text(json.dumps({"prompts": {"readagent": {"quality.gist": {
        "origin": "notebook", "cell": "The prompts we used for QuALITY with PaLM 2-L",
        "name": "gisting_prompt_template", "sha256": PUBLISHED["readagent"]["quality.gist"]["sha256"]}}}}))
    same = tmp_path / "same.ipynb"
    same.write_text(json.dumps(notebook_with(published)))
    assert script.main([str(same), "--data", str(data)]) == 0
    assert "OK       readagent.yaml quality.gist (verbatim): identical" in capsys.readouterr().out

    changed = tmp_path / "changed.ipynb"  # one trailing newline fewer, as YAML's |- would have made it
    changed.write_text(json.dumps(notebook_with(published[:-1])))
    assert script.main([str(changed), "--data", str(data)]) == 1
    out = capsys.readouterr().out
    assert "marked verbatim but differs" in out and "stored sha256 is stale" in out and "+'\\n'" in out

    unmapped = tmp_path / "unmapped.ipynb"
    unmapped.write_text(json.dumps(notebook_with(published.replace("{page_text}", "{page}"))))
    assert script.main([str(unmapped), "--data", str(data)]) == 1
    assert "unmapped placeholders ['page']" in capsys.readouterr().out
