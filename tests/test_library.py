"""Libraries (issue 24): every document method reads a named set of documents, composed from per-document
memories, and its citations name the document they are in."""

import pytest

from helpers import first_words_gist, middle_label
from pagemind import LLM, Document, Pagemind, ScriptedLLM, Store
from pagemind.answering.question import Question
from pagemind.errors import InputError, InputTooLarge, NotFound
from pagemind.library import Library
from pagemind.methods import registry

FACT = "Wren found the map inside an old sea chest."
ANSWER = "Wren found the map in a sea chest."


def paragraphs(tag: str, n: int, fact_at: int | None = None) -> str:
    out = []
    for i in range(n):
        filler = " ".join(f"{tag}{i}w{j}" for j in range(60)) + "."
        out.append(f"{FACT} {filler}" if i == fact_at else filler)
    return "\n\n".join(out)


def library() -> Library:
    return Library("shelf", (Document(paragraphs("a", 12), "alpha.txt"),
                             Document(paragraphs("b", 12, fact_at=7), "beta.txt"),
                             Document(paragraphs("c", 12), "gamma.txt")))


def navigate(request):
    prompt = request.messages[-1].content
    if "-2" in prompt and "sea chest" in prompt:
        return f"Reasoning: it is here.\nAction: -2\nAnswer: {ANSWER}"
    import re
    children = re.findall(r"Summary (\d+)", prompt)
    # the child whose summary holds the fact's words, else the first
    for block in re.split(r"\n(?=Summary \d+)", prompt):
        m = re.match(r"Summary (\d+)", block)
        if m and "sea chest" in block:
            return f"Reasoning: there.\nAction: {m.group(1)}"
    return "Reasoning: first.\nAction: -1" if not children else f"Reasoning: first.\nAction: {children[0]}"


def summarise(request):
    return request.messages[-1].content.split("\n\n")[-1][:400]


def fake(**roles):
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "summarise": summarise,
                                "lookup": lookup, "navigate": navigate, "answer": ANSWER, **roles})


def lookup(request):
    import re
    prompt = request.messages[-1].content
    for block in re.split(r"\n(?=<Page \d+>)", prompt):
        m = re.match(r"<Page (\d+)>", block)
        if m and "sea chest" in block:
            return f"I want to look up Page [{m.group(1)}]"
    return "I want to look up Page [0]"


READERS = [
    ("full", {}),
    ("rag", {"fragment_words": 100}),
    ("op-rag", {"fragment_words": 100}),
    ("rag", {"fragment_words": 100, "fragrel": True}),
    ("gistmem", {}),
    ("readagent-p", {}),
    ("readagent-s", {"max_pages": 1}),
    ("memwalker", {"segment_tokens": 200, "max_children": 2}),
]


@pytest.mark.parametrize("method,options", READERS, ids=[f"{m}{'+fragrel' if o.get('fragrel') else ''}"
                                                         for m, o in READERS])
def test_every_method_answers_across_a_library_and_cites_the_right_document(method, options):
    lib = library()
    scripted = fake()
    reader = registry.get(method)(LLM(scripted, concurrency=1), Store(":memory:"), **options)
    memory = reader.build(lib)
    answer = reader.answer(memory, Question.parse("Who found the map, and where?"), document=lib)
    assert answer.text == ANSWER
    assert answer.citations, answer.fallbacks
    beta = lib.members[1]
    first = answer.citations[0]
    assert (first.document, first.document_name, first.quote) == (beta.id, "beta.txt", FACT)
    for c in answer.citations:  # every citation points into the text of the document it names
        member = lib.member(c.document)
        assert member is not None and member.text[c.start:c.end] == c.quote and c.document_name == member.name
    assert answer.details["library"]["documents"] == 3
    assert "beta.txt" in answer.details["library"]["read"]


def test_the_composed_memories_keep_each_document_whole_and_in_order():
    lib = library()
    llm = LLM(fake(), concurrency=1)
    store = Store(":memory:")
    gists = registry.get("gistmem")(llm, store).build(lib)
    assert [p.index for p in gists.pages] == list(range(len(gists.pages)))
    assert [s.document.name for s in gists.shelves] == ["alpha.txt", "beta.txt", "gamma.txt"]
    assert sum(s.count for s in gists.shelves) == len(gists.pages)
    assert all(gists.gists[s.first].text.startswith(f"[{s.document.name}] ") for s in gists.shelves)
    tree = registry.get("memwalker")(llm, store, segment_tokens=200, max_children=2).build(lib)
    ids = {n.id for n in tree.nodes}
    assert len(ids) == len(tree.nodes) and [n.index for n in tree.nodes] == list(range(len(tree.nodes)))
    leaves = [n for n in tree.nodes if n.is_leaf]
    assert [n.index for n in leaves] == list(range(len(leaves)))
    for node in tree.nodes:  # every child named exists, and sits below its parent
        assert all(c in ids and tree.node(c).level < node.level for c in node.children)
    tops = [n for n in tree.nodes if n.summary.startswith("[")]  # each document's root, named
    assert sorted(n.summary.split("]")[0][1:] for n in tops) == ["alpha.txt", "beta.txt", "gamma.txt"]
    fragments = registry.get("op-rag")(llm, store, fragment_words=100).build(lib).fragments
    assert [f.source for f in fragments] == sorted(f.source for f in fragments)  # each document's, in order


def test_adding_a_document_builds_that_document_only():
    scripted = fake()
    llm = LLM(scripted, concurrency=1)
    store = Store(":memory:")
    lib = library()
    reader = registry.get("gistmem")(llm, store)
    reader.build(lib)
    alone = len(scripted.history)
    extra = Document(paragraphs("d", 12), "delta.txt")
    registry.get("gistmem")(LLM(probe := fake(), concurrency=1), Store(":memory:")).build(extra)
    reader.build(Library("shelf", (*lib.members, extra)))
    assert len(scripted.history) - alone == len(probe.history) > 0  # delta's build, nothing of the other three
    reader.build(Library("shelf", lib.members[:2]))  # a removed document: the others are found, nothing built
    assert len(scripted.history) - alone == len(probe.history)


def test_the_full_text_refuses_a_library_that_does_not_fit():
    big = Library("big", tuple(Document(paragraphs(t, 40), f"{t}.txt") for t in "abcdefgh"))
    reader = registry.get("full")(LLM(fake(), concurrency=1), Store(":memory:"), budget=5000)
    with pytest.raises(InputTooLarge, match="8 documents .* do not fit .* 5000-token budget in full"):
        reader.answer(reader.build(big), Question.parse("Who found the map?"), document=big)


def test_stored_libraries_are_added_asked_listed_and_removed(tmp_path):
    folder = tmp_path / "shelf"
    (folder / "sub").mkdir(parents=True)
    (folder / "alpha.txt").write_text(paragraphs("a", 12))
    (folder / "sub" / "beta.md").write_text(paragraphs("b", 12, fact_at=7))
    (folder / "notes.bin").write_bytes(b"\x00\x01 not a document")
    (folder / "empty.txt").write_text("")
    with Pagemind(fake(), store=tmp_path / "store.db") as pm:
        changes, skipped = pm.add("shelf", [folder])
        assert [(c.name, c.status) for c in changes] == [("alpha.txt", "added"), ("sub/beta.md", "added")]
        assert [s.path for s in skipped] == [str(folder / "empty.txt")]  # read, refused, named; the rest added
        (row,) = pm.libraries()
        assert (row.name, row.documents) == ("shelf", 2)
        answer = pm.ask("shelf", "Who found the map?", method="rag", fragment_words=100)
        assert answer.text == ANSWER and answer.citations[0].document_name == "sub/beta.md"
        beta = next(m for m in pm.library_documents("shelf") if m.name == "sub/beta.md")
        assert pm.store.memories_for(beta.document_id)  # its memory is stored under its own text
        # a changed document is updated in place; the unchanged one stays
        (folder / "alpha.txt").write_text(paragraphs("z", 12))
        changes, _ = pm.add("shelf", [folder / "alpha.txt", folder / "sub"])
        assert [(c.name, c.status) for c in changes] == [("alpha.txt", "updated"), ("beta.md", "added")]
        assert [m.name for m in pm.library_documents("shelf")] == ["alpha.txt", "beta.md", "sub/beta.md"]
        assert pm.remove("shelf", ["sub/beta.md"]) == ["sub/beta.md"]
        # the same text is still held under beta.md: its memories stay; removing that forgets them
        assert pm.store.memories_for(beta.document_id)
        pm.remove("shelf", ["beta.md"])
        assert pm.store.memories_for(beta.document_id) == [] and pm.store.document_text(beta.document_id) is None
        with pytest.raises(NotFound, match="holds no document 'nope'"):
            pm.remove("shelf", ["nope"])
        assert pm.remove("shelf") == ["alpha.txt"] and pm.libraries() == []
        with pytest.raises(NotFound):
            pm.library("shelf")
        for bad in ("a/b", " shelf", "..", "a b", "x" * 101):
            with pytest.raises(InputError, match="not a library name"):
                pm.add(bad, [folder / "alpha.txt"])


def test_a_folder_of_documents_is_asked_as_a_library(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "alpha.txt").write_text(paragraphs("a", 12))
    (tmp_path / "docs" / "beta.txt").write_text(paragraphs("b", 12, fact_at=7))
    with Pagemind(fake(), store=tmp_path / "store.db") as pm:
        answer = pm.ask(tmp_path / "docs", "Who found the map?", method="readagent-p")
    assert answer.citations[0].document_name == "beta.txt" and answer.citations[0].quote == FACT


def test_one_users_library_is_not_anothers(tmp_path):
    with Pagemind(fake(), store=tmp_path / "store.db") as pm:
        ann = pm.users.create("ann")[0].id
        bob = pm.users.create("bob")[0].id
        pm.add("shelf", [Document(paragraphs("a", 4), "a.txt")], user_id=ann)
        assert [r.name for r in pm.libraries(user_id=ann)] == ["shelf"] and pm.libraries(user_id=bob) == []
        with pytest.raises(NotFound):
            pm.library("shelf", user_id=bob)
        assert pm.libraries() == []  # nor the local user's
        pm.store.erase_user_data(ann)
        assert pm.libraries(user_id=ann) == []


def test_the_cli_adds_asks_shows_and_removes_a_library(tmp_path):
    from click.testing import CliRunner

    from pagemind.cli.main import cli

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "alpha.txt").write_text(paragraphs("a", 12))
    (tmp_path / "lib" / "beta.md").write_text(paragraphs("b", 12, fact_at=7))
    store = ["--store", str(tmp_path / "s.db")]

    def run(*args):
        result = CliRunner().invoke(cli, list(args), obj={"backend": fake()})
        assert result.exit_code == 0, result.output
        return result.output

    assert "added      beta.md (729 words)" in run("add", "shelf", str(tmp_path / "lib"), *store)
    assert "unchanged  beta.md" in run("add", "shelf", str(tmp_path / "lib" / "beta.md"), *store)
    assert run("libraries", *store).strip() == "shelf  2 document(s), 1,449 words"
    out = run("ask", "shelf", "Who found the map?", "-m", "rag", "--fragment-words", "100", *store)
    assert 'beta.md, fragment 4 (fragment): "Wren found the map inside an old sea chest."' in out
    out = run("ask", str(tmp_path / "lib"), "Who found the map?", "-m", "readagent-p", *store)  # a folder: a library
    assert "beta.md, page" in out and FACT in out
    assert [line.split()[0] for line in run("libraries", *store, "show", "shelf").splitlines()] == \
        ["alpha.txt", "beta.md"]
    # the store flag where a user types it: after the subcommand too (it was refused there)
    assert run("libraries", "show", "shelf", *store) == run("libraries", *store, "show", "shelf")
    run("libraries", "rm", "shelf", "alpha.txt", *store)
    assert run("libraries", *store).strip() == "shelf  1 document(s), 729 words"
    run("libraries", *store, "rm", "shelf")
    assert "no libraries" in run("libraries", *store)


def calls_to_build(method, options, document, store=None, scripted=None):
    scripted = scripted or fake()
    reader = registry.get(method)(LLM(scripted, concurrency=1), store or Store(":memory:"), **options)
    return reader.build(document), len(scripted.history)


UPDATED = [("gistmem", {}), ("memwalker", {"segment_tokens": 200, "max_children": 3})]


@pytest.mark.parametrize("method,options", UPDATED, ids=[m for m, _ in UPDATED])
def test_an_appended_document_reuses_its_unchanged_units_and_gets_the_memory_of_a_fresh_build(method, options):
    first = Document(paragraphs("a", 30), "log.txt")
    grown = Document(first.text + "\n\n" + paragraphs("n", 3), "log.txt", previous=first)
    fresh, full_calls = calls_to_build(method, options, Document(grown.text, "log.txt"))
    store = Store(":memory:")
    calls_to_build(method, options, first, store)
    updated, update_calls = calls_to_build(method, options, grown, store)
    assert 0 < update_calls <= 0.5 * full_calls, (update_calls, full_calls)
    assert updated.as_json() == fresh.as_json()  # the same memory as building the grown text from nothing


def test_a_changed_first_page_reuses_nothing_of_readagent():
    first = Document(paragraphs("a", 30), "log.txt")
    changed = Document("A new opening line.\n\n" + first.text, "log.txt", previous=first)
    store = Store(":memory:")
    calls_to_build("gistmem", {}, first, store)
    _, update_calls = calls_to_build("gistmem", {}, changed, store)
    _, full_calls = calls_to_build("gistmem", {}, Document(changed.text, "log.txt"))
    assert update_calls == full_calls


def test_a_kill_mid_update_resumes_without_redoing_what_was_reused(tmp_path):
    from pagemind.errors import LLMError

    first = Document(paragraphs("a", 30), "log.txt")
    grown = Document(first.text + "\n\n" + paragraphs("n", 6), "log.txt", previous=first)
    store = Store(tmp_path / "s.db")
    calls_to_build("gistmem", {}, first, store)
    fresh, full_calls = calls_to_build("gistmem", {}, Document(grown.text, "log.txt"))
    asked = []

    def dying(request):  # the update is killed at its second pagination call
        asked.append(request)
        if len(asked) == 2:
            raise LLMError("killed")
        return middle_label(request)

    with pytest.raises(LLMError):
        calls_to_build("gistmem", {}, grown, store, scripted=fake(paginate=dying))
    resumed, more = calls_to_build("gistmem", {}, grown, store)
    assert resumed.as_json() == fresh.as_json()
    assert len(asked) + more < full_calls  # the reused pages were asked for in neither attempt


def test_a_library_keeps_the_previous_text_of_a_changed_document_for_reuse_then_forgets_it(tmp_path):
    with Pagemind(fake(), store=tmp_path / "s.db") as pm:
        one = Document(paragraphs("a", 20), "log.txt")
        pm.add("logs", [one])
        pm.index("logs", method="gistmem")
        two = Document(one.text + "\n\n" + paragraphs("n", 2), "log.txt")
        (change,) = pm.add("logs", [two])[0]
        assert change.status == "updated"
        (member,) = pm.library("logs").members
        assert member.previous is not None and member.previous.id == one.id
        three = Document(two.text + "\n\n" + paragraphs("m", 2), "log.txt")
        pm.add("logs", [three])  # the version before the previous one goes, with its memories
        assert pm.store.document_text(one.id) is None and pm.store.memories_for(one.id) == []
        assert pm.store.document_text(two.id) is not None
        pm.remove("logs")
        assert pm.store.document_text(two.id) is None and pm.store.document_text(three.id) is None


def test_a_name_that_is_both_a_stored_library_and_a_folder_here_is_an_error_naming_both(tmp_path, monkeypatch):
    """pm.ask("notes") with a notes/ folder in the working directory and a stored library "notes": never a silent
    choice (it read the folder, and cited a file removed from the library)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "old.txt").write_text(paragraphs("o", 12, fact_at=3))
    monkeypatch.chdir(tmp_path)
    with Pagemind(fake(), store=tmp_path / "store.db") as pm:
        pm.add("notes", [Document(paragraphs("n", 12, fact_at=5), "kept.txt")])
        with pytest.raises(InputError, match=r"'notes' is both your stored library 'notes' and a folder here.*"
                                             r"'./notes'"):
            pm.ask("notes", "Who found the map?", method="rag")
        from_folder = pm.ask("./notes", "Who found the map?", method="rag")
        assert from_folder.citations[0].document_name == "old.txt"
        assert pm.ask(pm.library("notes"), "Who found the map?", method="rag").citations[0].document_name == \
            "kept.txt"
        (folder / "old.txt").unlink()
        folder.rmdir()
        assert pm.ask("notes", "Who found the map?", method="rag").citations[0].document_name == "kept.txt"
