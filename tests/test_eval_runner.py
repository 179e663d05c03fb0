"""The runner with the scripted fake: shared memories, records, failures, resume after a kill, MemGPT, raters."""

import json

import pytest

from helpers import first_words_gist, middle_label
from pagemind import Pagemind, ScriptedLLM
from pagemind.errors import BackendUnavailable, BadRequest, ConfigError
from pagemind.eval import EvalConfig, Runner, summarise
from pagemind.eval.rundir import RunDir
from test_eval_datasets import kv_base, quality_slice, write

STEP = '{{"thoughts": "t", "function": "{f}", "arguments": {args}}}'


def transcript(seed: int, lines: int = 24) -> list[dict]:
    return [{"speaker": "AB"[i % 2], "content": " ".join(f"m{seed}l{i}w{j}" for j in range(60)) + " ."}
            for i in range(lines)]


def qmsum_fixture(root, meetings=2):
    rows = [{"meeting_id": f"M{m}",
             "general_query_list": [{"query": "Summarize the whole meeting", "answer": "the plan"}],
             "specific_query_list": [{"query": f"What about topic {m}?", "answer": "a topic summary"}],
             "meeting_transcripts": transcript(m)} for m in range(meetings)]
    write(root / "qmsum" / "val.jsonl", rows, lines=True)


def lookup(request):
    text = request.messages[-1].content
    return "STOP" if "STOP" in text and "Page 0" in text.split("DO NOT ask")[-1] else \
        ("Page 0" if "STOP" in text else "I want to look up Page [0] to check")


def readagent_fake(**roles):
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "lookup": lookup,
                                "answer": "the plan for the topic", "rate": "YES", **roles})


def run(fake, root, run_dir, max_retries=None, **config):
    with Pagemind(fake, store=root / "store.db", max_retries=max_retries) as pm:
        return Runner(pm, EvalConfig(**{"data": str(root), **config}), run_dir, progress=False).run()


def records(run_dir):
    return RunDir(run_dir).read()


def test_memories_are_built_once_per_document_and_shared_by_the_readagent_modes(tmp_path):
    qmsum_fixture(tmp_path)
    fake = readagent_fake()
    result = run(fake, tmp_path, tmp_path / "run", dataset="qmsum", methods=("readagent-p", "readagent-s", "gistmem"))
    assert (result.examples, result.finished, result.errors) == (4, 12, 0)
    builds = [b for b in RunDir(tmp_path / "run").read("builds.jsonl") if b["status"] != "started"]
    assert len(builds) == 6  # 2 documents x 3 methods, all one memory per document
    assert not any(b["resumed"] for b in builds)
    first = {b["document_id"]: b for b in builds if b["method"] == "readagent-p"}
    for b in builds:
        assert b["memory_key"] == first[b["document_id"]]["memory_key"]
        assert b["reused"] == (b["method"] != "readagent-p")
    pages = sum(b["describe"]["pages"] for b in first.values())
    assert fake.roles().count("gist") == pages  # each page gisted once for all questions and modes
    recs = records(tmp_path / "run")
    assert {r["method"] for r in recs} == {"readagent-p", "readagent-s", "gistmem"} and len(recs) == 12
    p = next(r for r in recs if r["method"] == "readagent-p")
    assert p["status"] == "ok" and p["pages_read"] == [0] and p["lookups"] == 1
    assert set(p["scores"]) == {"f1", "rouge1", "rouge2", "rougeL", "rougeLsum"} and p["scores"]["rouge1"] > 0
    assert p["usage"]["calls"] == 2 and p["usage"]["prompt_tokens"] > 0  # look-up + answer; the build is apart
    # the summary charges ReadAgent-S the cost of the gists it reused from ReadAgent-P's build
    methods = {m["method"]: m for m in summarise(tmp_path / "run")["methods"]}
    assert methods["readagent-s"]["index_tokens"] == methods["readagent-p"]["index_tokens"] > 0


def test_a_failed_example_is_recorded_and_the_run_goes_on(tmp_path):
    quality_slice(tmp_path, n=3)

    def answer(request):
        if "What happens in 1?" in request.messages[0].content:
            raise BadRequest("the endpoint refused this one")
        return "Answer: (A)"

    result = run(ScriptedLLM(by_role={"answer": answer}), tmp_path, tmp_path / "run", dataset="quality",
                 methods=("full",))
    assert (result.finished, result.errors) == (3, 1)
    by_question = {r["question"]: r for r in records(tmp_path / "run")}
    failed = by_question["What happens in 1?"]
    assert failed["status"] == "error" and failed["error"].startswith("BadRequest: the endpoint refused")
    assert by_question["What happens in 0?"]["scores"] == {"accuracy": 1.0}  # gold 0 = A
    assert by_question["What happens in 2?"]["scores"] == {"accuracy": 0.0}
    [m] = summarise(tmp_path / "run")["methods"]
    assert (m["n"], m["errors"], m["score"]) == (3, 1, pytest.approx(1 / 3))  # the failure counts as 0


def test_an_unreachable_endpoint_stops_the_run_and_is_never_scored(tmp_path):
    quality_slice(tmp_path, n=3)
    down = {"on": True}

    def answer(request):
        if down["on"] and "What happens in 1?" in request.messages[0].content:
            raise BackendUnavailable("connection refused")
        return "Answer: (A)"

    fake = ScriptedLLM(by_role={"answer": answer})
    with pytest.raises(BackendUnavailable):  # not retried with backoff here: the outage is the point
        run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("full",), max_retries=0)
    assert all(r["status"] == "ok" for r in records(tmp_path / "run"))  # no zero for the outage
    down["on"] = False
    result = run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("full",))  # the same command again
    assert result.errors == 0 and len(records(tmp_path / "run")) == 3


def test_a_build_killed_half_way_resumes_and_its_cost_is_marked_unknown(tmp_path):
    qmsum_fixture(tmp_path, meetings=1)
    gists = {"n": 0}

    def dies_on_the_second_gist(request):
        gists["n"] += 1
        if gists["n"] == 2:
            raise KeyboardInterrupt
        return first_words_gist(request)

    with pytest.raises(KeyboardInterrupt):
        run(readagent_fake(gist=dies_on_the_second_gist), tmp_path, tmp_path / "run", dataset="qmsum",
            methods=("readagent-p",), concurrency=1)
    second = readagent_fake()
    run(second, tmp_path, tmp_path / "run", dataset="qmsum", methods=("readagent-p",))
    [build] = RunDir(tmp_path / "run").latest("builds.jsonl").values()
    assert build["status"] == "ok" and build["resumed"] is True
    assert second.roles().count("gist") < build["describe"]["pages"]  # the stored gist was not redone
    [m] = summarise(tmp_path / "run")["methods"]
    assert m["index_unknown"] == 1  # the report does not pass the remainder off as the whole build


def test_a_killed_run_resumes_where_it_stopped(tmp_path):
    quality_slice(tmp_path, n=5)
    calls = {"n": 0}

    def dies_on_the_third(request):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return "Answer: (B)"

    with pytest.raises(KeyboardInterrupt):
        run(ScriptedLLM(by_role={"answer": dies_on_the_third}), tmp_path, tmp_path / "run", dataset="quality",
            methods=("full",), concurrency=1)
    assert len(records(tmp_path / "run")) == 2
    with open(tmp_path / "run" / "examples.jsonl", "a") as f:
        f.write('{"key": "full|quality-4-x", "stat')  # a line cut short by the kill
    second = ScriptedLLM(by_role={"answer": "Answer: (B)"})
    result = run(second, tmp_path, tmp_path / "run", dataset="quality", methods=("full",))
    assert (result.skipped, result.finished) == (2, 3) and len(second.history) == 3
    rd = RunDir(tmp_path / "run")
    assert len(rd.latest()) == 5 and rd.skipped == 1
    assert summarise(tmp_path / "run")["unreadable_lines"] == 1
    again = run(ScriptedLLM(), tmp_path, tmp_path / "run", dataset="quality", methods=("full",))
    assert (again.finished, again.skipped) == (0, 5)  # nothing left: no LLM call at all


def test_resuming_with_other_settings_is_refused_but_methods_and_limit_extend(tmp_path):
    quality_slice(tmp_path, n=4)
    fake = ScriptedLLM(by_role={"answer": "Answer: (A)"})
    run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("full",), limit=2)
    with pytest.raises(ConfigError, match="different seed"):
        run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("full",), limit=2, seed=9)
    with pytest.raises(ConfigError, match="different budget"):
        run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("full",), limit=2, budget=100)
    result = run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("full", "rag"), limit=3)
    assert (result.skipped, result.finished) == (2, 4)  # 1 new question for full, 3 for rag
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["methods"] == ["full", "rag"] and config["limit"] == 3


def test_a_run_of_named_examples_answers_those_and_refuses_an_id_the_set_does_not_hold(tmp_path):
    quality_slice(tmp_path, n=4)
    fake = ScriptedLLM(by_role={"answer": "Answer: (A)"})
    with Pagemind(fake, store=tmp_path / "store.db") as pm:
        ids = tuple(e.id for e in Runner(pm, EvalConfig(dataset="quality", methods=("full",), data=str(tmp_path)),
                                         tmp_path / "probe", progress=False).examples())
    picked = (ids[3], ids[1])
    with Pagemind(fake, store=tmp_path / "store.db") as pm:  # in the data's order
        chosen = Runner(pm, EvalConfig(dataset="quality", methods=("full",), data=str(tmp_path), ids=picked),
                        tmp_path / "probe", progress=False).examples()
    assert [e.id for e in chosen] == [ids[1], ids[3]]
    result = run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("full",), ids=picked)
    assert result.finished == 2
    assert sorted(r["example_id"] for r in records(tmp_path / "run")) == sorted(picked)  # (as they finish)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["ids"] == list(picked)
    with pytest.raises(ConfigError, match="different ids"):  # another selection is another run
        run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("full",), ids=(ids[0],))
    from pagemind.errors import DatasetError

    with pytest.raises(DatasetError, match="no example 'nope'"):
        run(fake, tmp_path, tmp_path / "other", dataset="quality", methods=("full",), ids=("nope",))


def test_raising_nested_kv_seeds_extends_the_run_but_other_params_are_another_run(tmp_path):
    pairs = kv_base(tmp_path)
    write(tmp_path / "memgpt-nested-kv" / "nested_kv_instances.jsonl",
          [{"id": f"nested_kv-L{lv}-s{seed}", "levels": lv, "seed": seed, "query_key": pairs[seed][0],
            "answer": pairs[seed][1], "value_overrides": []} for lv in (1, 2) for seed in range(3)], lines=True)
    fake = ScriptedLLM(by_role={"answer": "no idea"})
    first = run(fake, tmp_path, tmp_path / "run", dataset="nested-kv", methods=("full",),
                params={"levels": "1,2", "seeds": "1"})
    assert first.finished == 2
    more = run(fake, tmp_path, tmp_path / "run", dataset="nested-kv", methods=("full",),
               params={"levels": "1,2", "seeds": "3"})
    assert (more.skipped, more.finished) == (2, 4)  # seeds 1 and 2 of each level are new
    assert {r["example_id"] for r in records(tmp_path / "run")} == {
        f"nested_kv-L{lv}-s{s}" for lv in (1, 2) for s in range(3)}
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["params"] == {"levels": "1,2", "seeds": "3"}
    smaller = run(fake, tmp_path, tmp_path / "run", dataset="nested-kv", methods=("full",),
                  params={"levels": "1,2", "seeds": "2"})  # a smaller sample of the same run: nothing to do
    assert (smaller.skipped, smaller.finished) == (4, 0)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["params"]["seeds"] == "3"
    for params in ({"levels": "1", "seeds": "3"}, {"levels": "1,2"}):
        with pytest.raises(ConfigError, match="different params"):
            run(fake, tmp_path, tmp_path / "run", dataset="nested-kv", methods=("full",), params=params)


def test_retry_errors_runs_failed_examples_again(tmp_path):
    quality_slice(tmp_path, n=2)
    run(ScriptedLLM(by_role={"answer": BadRequest("down")}), tmp_path, tmp_path / "run", dataset="quality",
        methods=("full",))
    assert {r["status"] for r in records(tmp_path / "run")} == {"error"}
    run(ScriptedLLM(by_role={"answer": "Answer: (A)"}), tmp_path, tmp_path / "run", dataset="quality",
        methods=("full",), retry_errors=True)
    assert {r["status"] for r in RunDir(tmp_path / "run").latest().values()} == {"ok"}


def test_budget_reaches_every_method_and_bad_options_fail_before_anything_is_written(tmp_path):
    quality_slice(tmp_path, n=1)
    fake = ScriptedLLM(by_role={"answer": "Answer: (A)"})
    run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("full",), budget=50)
    [r] = records(tmp_path / "run")
    assert 0 < r["context_words"] <= 50  # the fake counts a token per word
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["method_options"]["full"] == {"preset": "quality", "budget": 50}
    with pytest.raises(ConfigError, match="unknown full-text option"):
        run(fake, tmp_path, tmp_path / "bad", dataset="quality", methods=("full",),
            method_options={"full": {"max_pages": 2}})
    assert not (tmp_path / "bad").exists()


def test_memwalker_records_navigation_outcome(tmp_path):
    quality_slice(tmp_path, n=2)

    def navigate(request):
        text = request.messages[0].content
        return "Reasoning: first\nAction: 0" if "Summary 0" in text else "Reasoning: here\nAction: -2\nAnswer: (B)"

    fake = ScriptedLLM(by_role={"summarise": lambda r: " ".join(r.messages[0].content.split()[:10]),
                                "navigate": navigate})
    run(fake, tmp_path, tmp_path / "run", dataset="quality", methods=("memwalker",),
        method_options={"memwalker": {"segment_tokens": 60, "max_children": 2}})
    recs = records(tmp_path / "run")
    assert all(r["status"] == "ok" and r["details"]["navigation_failure"] is None for r in recs)
    assert all(r["details"]["valid_action_rate"] == 1.0 and "walk" in r["details"] for r in recs)
    assert "trajectory" not in recs[0]["details"]
    [m] = summarise(tmp_path / "run")["methods"]
    assert m["navigation_failure_rate"] == 0.0 and m["valid_action_rate"] == 1.0


def test_memgpt_on_nested_kv_searches_archival_storage(tmp_path):
    pairs = kv_base(tmp_path)
    write(tmp_path / "memgpt-nested-kv" / "nested_kv_instances.jsonl",
          [{"id": "nested_kv-L1-s0", "levels": 1, "query_key": pairs[2][0], "answer": pairs[2][1],
            "value_overrides": []}], lines=True)
    steps = [STEP.format(f="archival_memory_search",
                         args=json.dumps({"query": pairs[2][0], "page": 0, "request_heartbeat": True})),
             STEP.format(f="send_message", args=json.dumps({"message": f"The value is {pairs[2][1]}"}))]
    fake = ScriptedLLM(by_role={"agent-step": steps})
    run(fake, tmp_path, tmp_path / "run", dataset="nested-kv", methods=("memgpt",), budget=500)
    [r] = records(tmp_path / "run")
    assert r["status"] == "ok" and r["scores"] == {"accuracy": 1.0}
    assert r["details"]["functions"] == ["archival_memory_search", "send_message"]
    assert r["details"]["valid_action_rate"] == 1.0 and r["usage"]["calls"] == 2
    search_result = fake.history[1].messages[-1].content
    assert f"Key-value pair: key = {pairs[2][0]}, value = {pairs[2][1]}" in search_result
    assert "find the value for the key " + pairs[2][0] in fake.history[0].messages[-1].content
    assert r["details"]["window"] > 500  # the empty prompt + the budget + the reply
    with Pagemind(ScriptedLLM(), store=tmp_path / "store.db") as pm:
        from pagemind.agent import AgentStore

        assert AgentStore(pm.store).list_agents() == []  # the per-example agent is gone


def test_memgpt_on_a_conversation_gets_it_in_recall(tmp_path):
    from test_eval_datasets import locomo_conv

    write(tmp_path / "locomo" / "locomo_conversations_1-5.json", [locomo_conv()])
    steps = [STEP.format(f="conversation_search", args=json.dumps({"query": "cat", "page": 0,
                                                                   "request_heartbeat": True})),
             STEP.format(f="send_message", args=json.dumps({"message": "A cat"}))]
    fake = ScriptedLLM(by_role={"agent-step": steps})
    run(fake, tmp_path, tmp_path / "run", dataset="locomo", methods=("memgpt",))
    [r] = records(tmp_path / "run")
    assert r["scores"]["f1"] == 1.0 and "I adopted a cat." in fake.history[1].messages[-1].content
    assert "the conversations between Ann and Bo" in fake.history[0].messages[0].content
    # both speakers' turns are what the agent was told, under their names: found and cited as theirs (issue 50)
    told = {c["quote"]: c for c in r["citations"] if c.get("document") == "recall"}
    assert "Ann: I adopted a cat." in told and "[shares a photo: a cat on a sofa]" in told, told  # Bo's turn too
    assert "D1:2" in json.dumps(told["[shares a photo: a cat on a sofa]"]), told
    # asked right after the conversation (its last turn's time), not today: "when" reads against its dates
    assert '"time": "2023-05-08 13:5' in fake.history[0].messages[-1].content


def test_raters_add_lr_scores_with_their_own_usage(tmp_path):
    qmsum_fixture(tmp_path, meetings=1)
    fake = readagent_fake(rate=["NO", "Yes, partially"] * 2)
    run(fake, tmp_path, tmp_path / "run", dataset="qmsum", methods=("full",), raters=True)
    recs = records(tmp_path / "run")
    assert all(r["scores"]["lr1"] == 0.0 and r["scores"]["lr2"] == 1.0 for r in recs)
    assert all(r["rater_usage"]["calls"] == 2 and r["usage"]["calls"] == 1 for r in recs)
    assert "lr2" in summarise(tmp_path / "run")["methods"][0]["metrics"]


def test_mtbench_plus_is_always_judged(tmp_path):
    conv = {"id": "mt-1", "conversations": [
        {"from": "human", "value": "I love cats.", "turn-info": "writing-1-0"}, {"from": "chatbot", "value": ""},
        {"from": "human", "value": "What animal did I mention?", "turn-info": "writing-1-Q"}]}
    write(tmp_path / "mtbench-plus" / "mtbenchplus.json", [conv])
    write(tmp_path / "mtbench-plus" / "prompts.json", {"judge": {"system": "RCH_0 / UQ_1 / BR_2", "instruction": ""}})
    fake = ScriptedLLM(by_role={"answer": "Cats.", "rate": "[[90]]"})
    run(fake, tmp_path, tmp_path / "run", dataset="mtbench-plus", methods=("full",))
    [r] = records(tmp_path / "run")
    assert r["scores"] == {"judge": 0.9} and r["rating"]["judge"] == 90 and "judge" not in r["meta"]
    assert fake.history[-1].messages[0].content == "I love cats. / What animal did I mention? / Cats."


def test_unknown_methods_are_refused():
    from pagemind.eval import expand_methods

    assert expand_methods(["full,rag", "full", "memgpt"]) == ("full", "rag", "memgpt")
    assert "memwalker" in expand_methods(["all"])
    with pytest.raises(ConfigError, match="unknown method 'readagent'"):
        expand_methods(["readagent"])
    with pytest.raises(ConfigError, match="variant is METHOD@LABEL"):
        expand_methods(["rag@"])
    assert expand_methods(["rag,rag@fragrel"]) == ("rag", "rag@fragrel")


def test_a_variant_runs_the_base_method_with_its_own_options_and_shares_its_memory(tmp_path):
    quality_slice(tmp_path, n=2)
    fake = ScriptedLLM(by_role={"answer": "Answer: (A)"})
    result_dir = tmp_path / "run"
    run(fake, tmp_path, result_dir, dataset="quality", methods=("rag", "rag@fragrel"),
        method_options={"rag@fragrel": {"fragrel": True}})
    rows = records(result_dir)
    by_method = {m: [r for r in rows if r["method"] == m] for m in ("rag", "rag@fragrel")}
    assert len(by_method["rag"]) == len(by_method["rag@fragrel"]) == 2
    assert all(r["details"]["fragrel"] is False for r in by_method["rag"])
    assert all(r["details"]["fragrel"] is True for r in by_method["rag@fragrel"])
    config = json.loads((result_dir / "config.json").read_text())
    assert config["method_options"]["rag@fragrel"]["fragrel"] is True
    summary = summarise(result_dir)
    assert [m["method"] for m in summary["methods"]] == ["rag", "rag@fragrel"]


def test_builds_record_document_tokens_and_the_report_relates_index_cost_to_them(tmp_path):
    qmsum_fixture(tmp_path, meetings=1)
    run(readagent_fake(), tmp_path, tmp_path / "run", dataset="qmsum", methods=("readagent-p", "gistmem"))
    builds = [b for b in RunDir(tmp_path / "run").latest("builds.jsonl").values()]
    doc_tokens = {b["document_tokens"] for b in builds}
    assert len(doc_tokens) == 1 and doc_tokens.pop() == builds[0]["document_words"]  # the fake: a token per word
    p = next(b for b in builds if b["method"] == "readagent-p")
    spent = p["usage"]["prompt_tokens"] + p["usage"]["completion_tokens"]
    methods = {m["method"]: m for m in summarise(tmp_path / "run")["methods"]}
    assert methods["readagent-p"]["index_over_document"] == pytest.approx(spent / p["document_tokens"])
    assert methods["gistmem"]["index_over_document"] is None  # it reused ReadAgent-P's gists: no build of its own


def test_auto_hands_the_sets_preset_to_the_method_it_picks(tmp_path):
    """`eval -m auto` and `eval -m <its pick>` send the same prompts: QMSum's preset reaches the pick (it answered 11
    of 12 held-out QMSum queries differently when it did not)."""
    prompts = {}
    for method in ("auto", "op-rag"):
        root = tmp_path / method
        qmsum_fixture(root, meetings=1)
        fake = ScriptedLLM(by_role={"answer": "the plan"}, context_window=2048)  # 1,464 words: beyond the room
        run(fake, root, root / "run", dataset="qmsum", methods=(method,))
        prompts[method] = [r.messages[-1].content for r in fake.history if r.role == "answer"]
        if method == "auto":
            assert {r["details"]["auto"]["method"] for r in records(root / "run")} == {"op-rag"}
    assert prompts["auto"] and prompts["auto"] == prompts["op-rag"]
    assert prompts["auto"][0].lstrip().startswith("Read the question and text below")  # QMSum's prompt, not QuALITY's


def test_short_answers_score_the_phrase_an_answer_gives_in_its_own_words(tmp_path):
    """--short-answers: one more call reads the question and the answer alone and gives the part that answers it;
    the phrase is scored, the answer as given kept, the call counted in the answer's usage. A phrase adding words the
    answer lacks is asked again, then the answer as given is scored, recorded; options are never shortened."""
    from test_eval_datasets import locomo_conv

    said = "Ann told Bo that she adopted a cat last week."
    steps = [STEP.format(f="send_message", args=json.dumps({"message": said}))]
    for short, scored in ((["a cat"], "a cat"), (["a grey cat", "a tabby"], said)):
        root = tmp_path / short[0]  # a store each: its response cache would replay the first phrase
        write(root / "locomo" / "locomo_conversations_1-5.json", [locomo_conv()])
        fake = ScriptedLLM(by_role={"agent-step": steps, "short-answer": short})
        run(fake, root, root / "run", dataset="locomo", methods=("memgpt",), short_answers=True)
        [r] = records(root / "run")
        assert r["prediction"] == scored and r["details"]["reply"] == said
        assert r["details"].get("short") == (None if scored == said else scored)
        asked = [q for q in fake.history if q.role == "short-answer"]
        assert len(asked) == len(short) and said in asked[0].messages[0].content
        assert r["usage"]["calls"] == len(fake.history)  # the agent's step and the short answer's calls
        if scored == said:
            assert any("grey" in f and "as given is scored" in f for f in r["fallbacks"])
            assert "grey" in asked[1].messages[-1].content  # the re-ask names the word the answer lacks
        else:
            assert r["scores"]["f1"] == 1.0  # "a cat" against the gold "A cat"
    with pytest.raises(ConfigError, match="short_answers"):  # another run's directory: not resumed as this one
        run(ScriptedLLM(by_role={"agent-step": steps}), root, root / "run", dataset="locomo", methods=("memgpt",))


def test_short_answers_leave_options_refusals_and_failed_calls_to_the_answer_as_given(tmp_path):
    """No call for an option, an empty answer or a refusal; a summary set is never shortened; a call that fails
    (not a backend outage, which stops the run to resume) leaves the answer scored as given, recorded."""
    from pagemind import LLM
    from pagemind.answering.question import Answer, Question
    from pagemind.eval.short import shorten

    fake = ScriptedLLM(default="B")
    llm = LLM(fake, concurrency=1)
    for answer in (Answer(Question("Which?", ("one", "two")), "rag", "two", choice=1),
                   Answer(Question("Who?"), "rag", "  "),
                   Answer(Question("Who?"), "rag", "The text does not say who signed the lease.")):
        shorten(llm, answer)
        assert "short" not in answer.details and not fake.history
    qmsum_fixture(tmp_path, meetings=1)
    fake = readagent_fake(**{"short-answer": "the plan"})
    run(fake, tmp_path, tmp_path / "run", dataset="qmsum", methods=("full",), short_answers=True)
    assert "short-answer" not in fake.roles()  # summaries are scored whole
    from test_eval_datasets import locomo_conv

    root = tmp_path / "locomo"
    write(root / "locomo" / "locomo_conversations_1-5.json", [locomo_conv()])
    said = "Ann adopted a cat."
    steps = [STEP.format(f="send_message", args=json.dumps({"message": said}))]
    fake = ScriptedLLM(by_role={"agent-step": steps, "short-answer": BadRequest("the server refused the request")})
    run(fake, root, root / "run", dataset="locomo", methods=("memgpt",), short_answers=True)
    [r] = records(root / "run")
    assert r["status"] == "ok" and r["prediction"] == said and "short" not in r["details"]
    assert any("short answer: the call failed" in f for f in r["fallbacks"])


def test_a_short_answer_keeps_the_answers_numbers_whole_and_its_negation():
    from pagemind.eval.short import problem

    assert problem("2735", "Net income was $2,735 million in 2022.") == ""  # the same number, written plainly
    assert problem("2 roadtrips", "They went on two roadtrips.") == ""  # a number in digits for its words
    assert problem("two", "They took 2 trips.") == "" and "3" in problem("three", "They took 2 trips.")
    assert "2.5" in problem("2.5 million", "It raised $5.2 million.")  # not the digits of another number
    assert "negation" in problem("John is patriotic", "No, John is not patriotic.")
    assert problem("No", "No, John is not patriotic.") == ""
    assert "grey" in problem("a grey cat", "Ann adopted a cat.")
