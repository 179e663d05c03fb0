from pagemind.text import split_paragraphs, word_count


def test_blank_line_paragraphs_join_wrapped_lines():
    text = "First line\nwrapped here.\n\nSecond para.\n\n\nThird."
    assert split_paragraphs(text) == ["First line wrapped here.", "Second para.", "Third."]


def test_single_newlines_are_paragraphs():
    assert split_paragraphs("One.\nTwo.\nThree.") == ["One.", "Two.", "Three."]


def test_gutenberg_style_blank_lines_inside_sentences():
    body = "\n\n\n".join(f"Para {i} starts here and\n\n goes on to the end {i}." for i in range(6))
    paras = split_paragraphs(body)
    assert len(paras) == 6
    assert paras[2] == "Para 2 starts here and goes on to the end 2."


def test_no_breaks_at_all_falls_back_to_sentences():
    text = " ".join(f"Sentence number {i} is here." for i in range(200))  # 1000 words, no newline
    paras = split_paragraphs(text, max_words=100)
    assert len(paras) == 10
    assert all(word_count(p) <= 100 for p in paras)
    assert " ".join(paras) == text


def test_huge_paragraph_without_punctuation_is_cut_in_windows():
    text = " ".join(f"w{i}" for i in range(20000))
    paras = split_paragraphs(text, max_words=300)
    assert [word_count(p) for p in paras] == [300] * 66 + [200]
    assert " ".join(paras) == text


def test_hard_wrapped_lines_are_unwrapped():
    line = "this line is wrapped at a fixed width and goes"
    text = "\n".join([line] * 3 + ["on until it ends."] + [line] * 5 + ["and stops here."])
    paras = split_paragraphs(text)
    assert len(paras) == 2
    assert paras[0].endswith("until it ends.")
