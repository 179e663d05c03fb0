"""A document's own sections, from files generated here and read by the real extractors: a PDF's outline (and one
that does not hold, which falls back to the text's headings), Markdown, HTML, DOCX heading styles (renamed ones
too) and plain text; shown by `pagemind show FILE --sections`."""

import io
import json

import pytest
from click.testing import CliRunner

from helpers import make_pdf
from pagemind.cli.main import cli
from pagemind.text import load_document
from pagemind.text.document import load_bytes
from pagemind.text.sections import label, outline_text

pypdf = pytest.importorskip("pypdf")

PAGES = [["1 Introduction", "The company grew in 2023."],
         ["2 Results", "Revenue was 4,512 million.", "2.1 Cash flows", "Cash from operations rose."],
         ["3 Outlook", "We expect growth in 2024."]]


def with_outline(pages, entries):
    """The PDF of ``pages`` with an outline: (title, page index, parent index in entries or None)."""
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make_pdf(pages))))
    made = []
    for title, page, parent in entries:
        made.append(writer.add_outline_item(title=title, page_number=page,
                                            parent=None if parent is None else made[parent]))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_pdf_outline_is_the_documents_structure_with_pages(tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(with_outline(PAGES, [("1 Introduction", 0, None), ("2 Results", 1, None),
                                          ("2.1 Cash flows", 1, 1), ("3 Outlook", 2, None)]))
    doc = load_document(path)
    got = [(s.title, s.level, s.page, s.end_page, s.source) for s in doc.sections]
    assert got == [("1 Introduction", 1, 1, 1, "outline"), ("2 Results", 1, 2, 2, "outline"),
                   ("2.1 Cash flows", 2, 2, 2, "outline"), ("3 Outlook", 1, 3, 3, "outline")]
    cash = doc.text.index("Cash from operations")
    assert label(doc.section_path(cash)) == "§2 Results › 2.1 Cash flows"
    results = doc.sections[1]
    assert doc.text[results.start:results.end].startswith("2 Results") and "Cash from" in \
        doc.text[results.start:results.end] and "Outlook" not in doc.text[results.start:results.end]

    shown = CliRunner().invoke(cli, ["show", str(path), "--sections"])
    assert shown.exit_code == 0, shown.output
    assert shown.output.splitlines() == ["1 Introduction  (p. 1)", "2 Results  (p. 2)", "  2.1 Cash flows  (p. 2)",
                                         "3 Outlook  (p. 3)"]
    as_json = json.loads(CliRunner().invoke(cli, ["show", str(path), "--sections", "--json"]).output)
    assert as_json["pages"] == 3 and [s["title"] for s in as_json["sections"]][2] == "2.1 Cash flows"


def test_an_outline_that_does_not_hold_falls_back_to_the_texts_headings(tmp_path):
    broken = with_outline(PAGES, [("Chapter One", 0, None), ("Chapter Two", 1, None), ("Chapter Three", 2, None)])
    doc = load_bytes(broken, "broken.pdf")  # none of its titles is on its page
    assert [(s.title, s.source) for s in doc.sections] == [("1 Introduction", "text"), ("2 Results", "text"),
                                                           ("2.1 Cash flows", "text"), ("3 Outlook", "text")]
    assert [s.level for s in doc.sections] == [1, 1, 2, 1]


def test_markdown_html_and_text_headings():
    md = load_bytes(b"# Report\n\nIntro.\n\n## Results\n\nUp.\n\nCash flows\n----------\n\nFine.\n\n```\n# code\n```\n",
                    "r.md")
    assert outline_text(md.sections) == "Report\n  Results\n  Cash flows"
    assert md.sections[0].end == len(md.text) and md.sections[1].end == md.sections[2].start
    nested = "".join(f"<section><h1>Level {i}</h1><p>text {i}</p>" for i in range(40)) + "</section>" * 40
    html = load_bytes(("<html><body><nav><h1>Menu</h1></nav><h1>Title</h1><p>a</p><h2>Part <b>one</b></h2><p>b</p>"
                       + nested + "</body></html>").encode(), "page.html")
    titles = [s.title for s in html.sections]
    assert titles[:2] == ["Title", "Part one"] and "Menu" not in titles and len(titles) == 42
    assert max(s.level for s in html.sections) <= 6
    text = load_bytes(b"CHAPTER 1 The Beginning\n\nIt was dark.\n\n1.1 The Storm\n\nWind.\n\n1.2 The Calm\n\n"
                      b"Quiet.\n\nCHAPTER 2 The End\n\n2.1 After\n\nDone.\n", "book.txt")
    assert [(s.title, s.level) for s in text.sections] == [
        ("CHAPTER 1 The Beginning", 1), ("1.1 The Storm", 2), ("1.2 The Calm", 2), ("CHAPTER 2 The End", 1),
        ("2.1 After", 2)]
    steps = load_bytes(b"How to start.\n\n1 Open the lid\n2 Take the map\n3 Close it\n\nThat is all.", "steps.txt")
    assert steps.sections == ()  # a list of steps is not a document's structure


def test_docx_heading_styles_and_a_renamed_heading_style(tmp_path):
    docx = pytest.importorskip("docx")
    made = docx.Document()
    made.add_heading("Annual report", level=1)
    made.add_paragraph("The year in short.")
    made.add_heading("Liquidity", level=2)
    made.add_paragraph("Cash was ample.")
    made.styles["Heading 3"].name = "Small Title"  # renamed: its outline level still says it is a heading
    made.add_paragraph("Cash flows", style="Small Title")
    made.add_paragraph("Operating cash rose.")
    path = tmp_path / "report.docx"
    made.save(path)
    doc = load_document(path)
    assert [(s.title, s.level, s.source) for s in doc.sections] == [
        ("Annual report", 1, "markup"), ("Liquidity", 2, "markup"), ("Cash flows", 3, "markup")]
    assert label(doc.section_path(doc.text.index("Operating"))) == "§Annual report › Liquidity › Cash flows"


def test_sections_are_kept_with_the_document_and_served_over_http(tmp_path):
    from fastapi.testclient import TestClient

    from pagemind import Pagemind, ScriptedLLM
    from pagemind.server.app import create_app
    from pagemind.users import create_user

    pm = Pagemind(ScriptedLLM(), store=tmp_path / "s.db")
    ann, key = create_user(pm.store, "ann")
    _, bob_key = create_user(pm.store, "bob")
    pdf = with_outline(PAGES, [("1 Introduction", 0, None), ("2 Results", 1, None), ("2.1 Cash flows", 1, 1),
                               ("3 Outlook", 2, None)])
    with TestClient(create_app(pm, auth="keys")) as client:
        made = client.post("/v1/documents", headers={"Authorization": f"Bearer {key}"},
                           files={"file": ("report.pdf", pdf, "application/pdf")})
        assert made.status_code == 201, made.text
        doc_id = made.json()["id"]
        got = client.get(f"/v1/documents/{doc_id}/sections", headers={"Authorization": f"Bearer {key}"}).json()
        assert got["format"] == "pdf" and got["pages"] == 3
        assert [(s["title"], s["level"], s["page"]) for s in got["sections"]] == [
            ("1 Introduction", 1, 1), ("2 Results", 1, 2), ("2.1 Cash flows", 2, 2), ("3 Outlook", 1, 3)]
        theirs = client.get(f"/v1/documents/{doc_id}/sections", headers={"Authorization": f"Bearer {bob_key}"})
        assert theirs.status_code == 404
    kept = pm.open_document(doc_id, user_id=ann.id)  # read back from the store: pages and sections as read
    assert kept.pages == load_bytes(pdf, "report.pdf").pages and kept.sections[2].title == "2.1 Cash flows"
    pm.close()


def test_a_citation_names_the_section_path_and_the_page(tmp_path):
    from pagemind import Pagemind, ScriptedLLM

    path = tmp_path / "report.pdf"
    path.write_bytes(with_outline(PAGES, [("1 Introduction", 0, None), ("2 Results", 1, None),
                                          ("2.1 Cash flows", 1, 1), ("3 Outlook", 2, None)]))
    fake = ScriptedLLM(by_role={"answer": 'Cash rose. [quote: "Cash from operations rose."]'})
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        answer = pm.ask(path, "What happened to cash?", method="full")
    (cited,) = answer.citations
    assert cited.section == "§2 Results › 2.1 Cash flows" and cited.source_page == 2
    assert cited.location == "text (§2 Results › 2.1 Cash flows, p. 2)"


def test_rag_fragments_never_cross_a_section_and_name_its_path(tmp_path):
    from pagemind import Pagemind, ScriptedLLM
    from pagemind.retrieval.fragments import split_sections

    body = " ".join(f"w{i}" for i in range(25))
    md = f"# Report\n\nIntro words here.\n\n## Results\n\n{body}\n\n### Cash flows\n\nCash rose.\n\n## Outlook\n\nUp."
    doc = load_bytes(md.encode(), "r.md")
    fragments = split_sections(doc.text, doc.sections, size=10)
    assert [(f.section, f.words) for f in fragments] == [  # 26 words of Results: three windows of about 9
        ("§Report", 4), ("§Report › Results", 9), ("§Report › Results", 9), ("§Report › Results", 8),
        ("§Report › Results › Cash flows", 4), ("§Report › Outlook", 2)]
    assert fragments[3].text.endswith("w24") and fragments[4].text == "Cash flows\n\nCash rose."  # its lines kept
    assert " ".join(f.text for f in fragments).split() == doc.text.split()  # in order, nothing lost
    path = tmp_path / "r.md"
    path.write_text(md)
    fake = ScriptedLLM(by_role={"answer": 'It rose. [quote: "Cash rose."]'})
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        answer = pm.ask(path, "What did cash do?", method="rag", fragments="sections", fragment_words=10)
        passages = pm.retrieve(path, "cash", k=1, method="rag", fragments="sections", fragment_words=10)
    assert answer.citations[0].section == "§Report › Results › Cash flows"
    assert passages[0].section == "§Report › Results › Cash flows" and passages[0].quote.startswith("Cash flows")


def test_memwalker_on_the_sections_tree_titles_only_builds_without_an_llm_call(tmp_path):
    from pagemind import Pagemind, ScriptedLLM

    path = tmp_path / "report.pdf"
    path.write_bytes(with_outline(PAGES, [("1 Introduction", 0, None), ("2 Results", 1, None),
                                          ("2.1 Cash flows", 1, 1), ("3 Outlook", 2, None)]))
    fake = ScriptedLLM(by_role={"navigate": ["Reasoning: results hold it\nAction: 1",
                                             "Reasoning: cash flows\nAction: 1",
                                             "Reasoning: here\nAction: -2\nAnswer: Cash from operations rose."]})
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        plan = pm.plan(path, "memwalker", tree="sections", summaries="titles")
        tree = pm.index(plan)
        assert fake.history == []  # titles only: no LLM call to build
        shown = {n.id: n.summary for n in tree.nodes}
        assert shown["root"].startswith("report.pdf: [§1 Introduction] 1 Introduction")
        assert shown["1"].startswith("2 Results: [§2 Results] 2 Results") and "[§2 Results › 2.1 Cash flows]" in \
            shown["1"]
        answer = pm.ask(path, "What happened to cash?", method="memwalker", tree="sections", summaries="titles")
    assert answer.text.startswith("Cash from operations rose.")
    assert [r.role for r in fake.history] == ["navigate"] * 3
    assert any(c.section == "§2 Results › 2.1 Cash flows" and c.source_page == 2 for c in answer.citations)
    leaf_prompt = fake.history[-1].messages[-1].content
    assert "Main text: 2.1 Cash flows" in leaf_prompt  # the leaf read is the section's own text


def test_readagent_paginates_inside_sections_and_a_short_section_joins_the_next():
    from helpers import first_words_gist, middle_label
    from pagemind import LLM, Pagemind, ScriptedLLM, Store
    from pagemind.methods import registry

    def chapter(c, n):
        return f"Chapter {c}: Part {c}\n\n" + "\n\n".join(" ".join(f"c{c}p{i}w{j}" for j in range(60)) + "."
                                                          for i in range(n))

    with Pagemind(ScriptedLLM(), store=":memory:") as pm:
        book = pm.read("\n\n".join(chapter(c, n) for c, n in [(1, 12), (2, 3), (3, 1), (4, 15)]), "book.txt")
    built = {}
    for pagination in ("sequential", "sections"):
        fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
        reader = registry.get("readagent-p")(LLM(fake, concurrency=1), Store(":memory:"), pagination=pagination)
        built[pagination] = (reader.build(book).pages, fake.roles().count("paginate"))
    paper, _ = built["sequential"]
    assert any(p.start < 13 < p.end for p in paper)  # the paper's pages run across Chapter 2's heading (paragraph 13)
    pages, calls = built["sections"]
    assert [(p.start, p.end) for p in pages][:3] == [(0, 8), (8, 13), (13, 23)] and pages[1].label_source == "tail"
    assert pages[2].text.startswith("Chapter 2: Part 2")  # chapters 2 and 3 (short) open the span of chapter 4
    assert calls < built["sequential"][1] and pages[-1].end == paper[-1].end  # fewer calls, the whole text


def test_a_printed_table_of_contents_gives_a_pdf_without_an_outline_its_sections():
    """Issue 37: an annual report's "Contents" page (dot leaders, printed page numbers that skip the cover and the
    contents page itself) becomes its sections, found after the contents list on the pages it names."""
    body = ["Lorem ipsum dolor sit amet, the year in brief and what it held for the company."] * 6
    contents = ["Contents", "1 Letter to shareholders ........ 1", "2 Results .......... 2",
                "2.1 Cash flows ....... 3", "3 Outlook 4"]
    pages = [["Annual Report 2025", "The Company plc"], contents,
             ["1 Letter to shareholders", *body], ["2 Results", *body], ["2.1 Cash flows", *body],
             ["3 Outlook", *body]]
    doc = load_bytes(make_pdf(pages), "report.pdf")
    got = [(s.title, s.level, s.page, s.source) for s in doc.sections]
    assert got == [("1 Letter to shareholders", 1, 3, "toc"), ("2 Results", 1, 4, "toc"),
                   ("2.1 Cash flows", 2, 5, "toc"), ("3 Outlook", 1, 6, "toc")]  # printed page + 2
    assert all(doc.text[s.start:].startswith(s.title) for s in doc.sections)
    assert doc.sections[1].end == doc.sections[3].start  # "2 Results" holds 2.1
    lists = load_bytes(make_pdf([["Contents", "see below 1"], body, ["Notes", *body]]), "short.pdf")
    assert all(s.source != "toc" for s in lists.sections)  # one entry is no contents list


def test_a_pdf_without_outline_or_contents_finds_its_headings_by_type(tmp_path):
    """Issue 37: a report without bookmarks or a contents page has its headings set larger (and bold) than its
    body: they become its sections, levels by size (22 pt chapters, 15 pt sections, bold body-size lines below
    them); a running head repeated on every page is not a heading, and a title set on two lines is one."""
    from helpers import styled_page

    body = [(11, False, "The group's revenue rose in every region of its business this year.")] * 4
    head = (9, False, "Annual report 2023")
    pages = [styled_page([head, (22, True, "1 Our year"), *body, (15, True, "1.1 Revenue"), *body,
                          (11, True, "Outlook for the group"), *body]),
             styled_page([head, (15, True, "1.2 Costs and"), (15, True, "savings"), *body, (22, True, "2 Risks"),
                          *body]),
             styled_page([head, *body, (11, False, "Total: 4,512."), *body])]
    path = tmp_path / "report.pdf"
    path.write_bytes(make_pdf(pages))
    doc = load_document(path)
    got = [(s.title, s.level, s.page, s.end_page, s.source) for s in doc.sections]
    assert got == [("1 Our year", 1, 1, 2, "layout"), ("1.1 Revenue", 2, 1, 2, "layout"),
                   ("Outlook for the group", 3, 1, 2, "layout"), ("1.2 Costs and savings", 2, 2, 2, "layout"),
                   ("2 Risks", 1, 2, 3, "layout")]
    assert all("Annual report" not in s.title for s in doc.sections)
    shown = CliRunner().invoke(cli, ["show", str(path), "--sections"])
    assert shown.exit_code == 0 and "1.2 Costs and savings" in shown.output and "p. 2" in shown.output


def test_a_charts_labels_and_numbers_are_not_headings(tmp_path):
    """Issue 47: a paper's chart, drawn as shapes with its labels set larger than the body (as a scaled figure is),
    gives no sections: a label drawn in or beside the figure is not a heading, nor a line of tick numbers; the
    paper's own headings around it stay."""
    from helpers import styled_page

    body = [(11, False, "The method reads each passage once and keeps what the question needs to be answered.")] * 5
    text = styled_page([(18, True, "1 Introduction"), *body, (18, True, "2 Results"), *body])
    chart = [b"0.8 g 100 120 40 120 re f 200 120 40 90 re f 300 120 40 150 re f 0 g",  # three bars
             b"0.5 w 90 120 m 360 120 l S 90 120 m 90 290 l S"]  # the axes
    for x, y, word in [(104, 104, "GPT-4"), (204, 104, "Llama"), (300, 104, "Ours"), (150, 296, "Accuracy"),
                       (250, 250, "Few shot")]:
        chart.append(b"BT /F2 15 Tf 1 0 0 1 %d %d Tm (%s) Tj ET" % (x, y, word.encode()))
    chart.append(b"BT /F1 15 Tf 1 0 0 1 40 60 Tm (0.2 0.4 0.6 0.8) Tj ET")
    pages = [text + b"\n" + b"\n".join(chart), styled_page([(18, True, "3 Discussion"), *body])]
    path = tmp_path / "paper.pdf"
    path.write_bytes(make_pdf(pages))
    doc = load_document(path)
    assert [(s.title, s.page, s.source) for s in doc.sections] == [
        ("1 Introduction", 1, "layout"), ("2 Results", 1, "layout"), ("3 Discussion", 2, "layout")]


def test_an_earnings_releases_headings_stand_out_from_its_prose_not_its_small_tables(tmp_path):
    """Issue 47: a release whose tables in 6-point type hold more characters than its prose: the body is the prose's
    size, so its headings are the larger lines, not every line of prose; a table's block of bold lines is no title,
    nor a paragraph's last line set apart."""
    from helpers import styled_page

    prose = [(10, False, "Net sales rose in every region, helped by prices and the volumes of the new plants.")] * 3
    rows = [(6, False, f"Segment {n} 1,204 1,377 2,510 2,618 (12)% 4.5 % 3.9 % 17,120 16,804 2 %") for n in range(12)]
    block = [(10, True, "Net sales by segment"), (10, True, "Three months ended June"), (10, True, "Reported")]
    pages = [styled_page([(14, True, "Key Financials"), *prose, *rows]),
             styled_page([(14, True, "Cash Returns to Shareholders"), *prose, (14, False, "volumes."), *block, *rows])]
    path = tmp_path / "release.pdf"
    path.write_bytes(make_pdf(pages))
    doc = load_document(path)
    assert [(s.title, s.page, s.source) for s in doc.sections] == [
        ("Key Financials", 1, "layout"), ("Cash Returns to Shareholders", 2, "layout")]


def test_type_that_is_not_structure_gives_no_layout_sections():
    """One size throughout (no bold): no layout headings; a deck where every other line is large: not structure."""
    from helpers import styled_page

    plain = load_bytes(make_pdf([styled_page([(11, False, "A plain letter with nothing set apart.")] * 8)]), "a.pdf")
    assert all(s.source != "layout" for s in plain.sections)
    deck = [styled_page([(24, True, f"Slide {n} title"), (11, False, "one point"), (24, True, f"Point {n}"),
                         (11, False, "two")]) for n in range(3)]
    assert all(s.source != "layout" for s in load_bytes(make_pdf(deck), "deck.pdf").sections)


def test_a_contents_page_with_front_matter_in_roman_numbers():
    """Issue 37: a contents list whose front matter is numbered in roman (after dot leaders: "Preface ..... iii")
    and the chapters in arabic from 1 again: each run is placed by its own offset."""
    from pagemind.text.sections import roman

    body = ["Lorem ipsum dolor sit amet, the year in brief and what it held for the company."] * 6
    contents = ["Contents", "Preface .......... iii", "Acknowledgements ........ iv", "1 Introduction ....... 1",
                "2 Methods ........ 2", "3 Results ......... 3"]
    pages = [["A Study of Tides", "J. Smith"], contents, ["Preface", *body], ["Acknowledgements", *body],
             ["1 Introduction", *body], ["2 Methods", *body], ["3 Results", *body]]
    doc = load_bytes(make_pdf(pages), "study.pdf")
    got = [(s.title, s.page, s.source) for s in doc.sections]
    assert got == [("Preface", 3, "toc"), ("Acknowledgements", 4, "toc"), ("1 Introduction", 5, "toc"),
                   ("2 Methods", 6, "toc"), ("3 Results", 7, "toc")]
    assert [roman(n) for n in ("iii", "xiv", "XII", "mix", "iiii")] == [3, 14, 12, None, None]


def test_every_outline_entry_is_kept_whatever_label_the_text_prints_with_it():
    """Issue 47: an outline of 162 entries lost 35 silently — all its lettered level-2 headings. A title is found
    after a letter or roman numeral the text prints before it ("A. Background"), or without the label the outline
    gives it when the text prints it after ("Methods B." for "B. Methods"); an entry whose words the text does not
    print is kept at its page; the outline's levels stay."""
    from pagemind.text.sections import Heading, locate

    text = ("Intro\nSome words here.\nA. Background\nThe history.\nIV. Theory\nSome theory.\nMethods B.\n"
            "How it was done.\nA chart of the results\n")
    pages = [0, text.index("A. Background"), text.index("IV. Theory"), text.index("Methods B."),
             text.index("A chart")]
    outline = [Heading(1, "Intro", 1), Heading(2, "Background", 2), Heading(2, "Theory", 3),
               Heading(3, "B. Methods", 4), Heading(2, "Results", 5)]
    found = locate(text, outline, pages, "outline", keep=True)
    assert [(s.title, s.level, s.page) for s in found] == [
        ("Intro", 1, 1), ("Background", 2, 2), ("Theory", 2, 3), ("B. Methods", 3, 4), ("Results", 2, 5)]
    assert [text[s.start:].split("\n")[0] for s in found] == [
        "Intro", "A. Background", "IV. Theory", "Methods B.", "A chart of the results"]
    assert [s.title for s in locate(text, outline, pages, "outline")] == [  # not kept: what the holding check counts
        "Intro", "Background", "Theory", "B. Methods"]
