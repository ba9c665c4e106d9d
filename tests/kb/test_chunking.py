import itertools

import pytest

from reasonloop.kb.ingest.chunking import Chunker, sentence_spans
from reasonloop.tokens import count_tokens


def _sentences(n: int, word: str = "alpha") -> str:
    return " ".join(f"Sentence {i} talks about {word} number {i}." for i in range(n))


def test_chunks_are_exact_slices_within_budget():
    text = "\n\n".join(_sentences(12, w) for w in ("apples", "pears", "plums"))
    chunker = Chunker(chunk_tokens=40, overlap_tokens=8)
    chunks = chunker.split(text)
    assert len(chunks) > 3
    for i, c in enumerate(chunks):
        assert c.ordinal == i
        assert text[c.start : c.end] == c.text
        assert c.tokens == count_tokens(c.text) <= 40
        assert c.text == c.text.strip()
    # every sentence lands in some chunk
    for s, e in sentence_spans(text):
        assert any(c.start <= s and e <= c.end for c in chunks)


def test_short_paragraphs_are_kept_whole_and_packed():
    text = "First paragraph here.\n\nSecond one.\n\n\nThird paragraph."
    chunks = Chunker(chunk_tokens=200, overlap_tokens=0).split(text)
    assert len(chunks) == 1
    assert chunks[0].text == text


def test_paragraph_boundaries_preferred_over_mid_paragraph_cuts():
    p1 = _sentences(3, "red")
    p2 = _sentences(3, "blue")
    text = p1 + "\n\n" + p2
    budget = max(count_tokens(p1), count_tokens(p2)) + 2
    chunks = Chunker(chunk_tokens=budget, overlap_tokens=0).split(text)
    assert [c.text for c in chunks] == [p1, p2]


def test_overlap_repeats_previous_tail_sentences():
    text = _sentences(30)
    chunks = Chunker(chunk_tokens=40, overlap_tokens=12).split(text)
    assert len(chunks) >= 3
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start < prev.end  # overlapping span
        assert nxt.end > prev.end  # but always moving forward


def test_no_overlap_means_disjoint_chunks():
    chunks = Chunker(chunk_tokens=40, overlap_tokens=0).split(_sentences(30))
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start >= prev.end


def test_chinese_sentence_punctuation_splits():
    sentence = "这是一个关于知识库的句子。"
    assert sentence_spans("甲。乙！丙？丁；戊") == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 9)]
    text = sentence * 40  # one paragraph, no spaces: must split at 。
    chunks = Chunker(chunk_tokens=30, overlap_tokens=0).split(text)
    assert len(chunks) > 1
    for c in chunks:
        assert c.text.endswith("。")
        assert c.tokens <= 30


def test_english_abbreviation_without_space_is_not_a_break():
    assert sentence_spans("Version 1.5 is out. Next!") == [(0, 19), (20, 25)]


def test_overlong_unpunctuated_text_is_windowed():
    text = "字" * 500
    chunks = Chunker(chunk_tokens=64, overlap_tokens=0).split(text)
    assert "".join(c.text for c in chunks) == text
    assert all(c.tokens <= 64 for c in chunks)
    words = " ".join(["word"] * 400)
    chunks = Chunker(chunk_tokens=50, overlap_tokens=0).split(words)
    assert all(c.tokens <= 50 for c in chunks)
    assert sum(c.text.count("word") for c in chunks) == 400


def test_pages_follow_chunk_start():
    page1 = _sentences(8, "one")
    page2 = _sentences(8, "two")
    text = page1 + "\n\n" + page2
    chunks = Chunker(chunk_tokens=40, overlap_tokens=0).split(text, pages=[(0, 1), (len(page1) + 2, 2)])
    assert {c.page for c in chunks} == {1, 2}
    for c in chunks:
        assert c.page == (1 if c.start < len(page1) else 2)


def test_empty_and_whitespace_text_give_no_chunks():
    assert Chunker().split("") == []
    assert Chunker().split(" \n\n \t") == []


@pytest.mark.parametrize(("size", "overlap"), [(8, 0), (100, 50), (100, -1)])
def test_bad_parameters_are_rejected(size, overlap):
    with pytest.raises(ValueError, match=str(size) if size < 16 else str(overlap)):
        Chunker(chunk_tokens=size, overlap_tokens=overlap)


def test_signature_changes_with_parameters():
    assert Chunker(100, 10).signature != Chunker(100, 20).signature
