from reasonloop.kb.retrieval.lexical import LexicalIndex, segment


def _index(tmp_path):
    idx = LexicalIndex(tmp_path / "lex")
    idx.add(
        [
            (1, "Running dogs chase cats in the park."),
            (2, "The cat sleeps all day."),
            (3, "Stock markets fell sharply on Monday."),
            (4, "知识库支持中文检索和混合搜索。"),
            (5, "北京是中华人民共和国的首都。"),
        ]
    )
    idx.commit()
    return idx


def test_english_stemming(tmp_path):
    idx = _index(tmp_path)
    assert [k for k, _ in idx.search("run dog", 5)] == [1]
    assert {k for k, _ in idx.search("cat", 5)} == {1, 2}
    assert idx.search("markets", 5)[0][0] == 3
    idx.close()


def test_chinese_segmentation(tmp_path):
    idx = _index(tmp_path)
    assert [k for k, _ in idx.search("中文检索", 5)] == [4]
    assert next(k for k, _ in idx.search("首都在哪里", 5)) == 5
    assert [k for k, _ in idx.search("人民", 5)] == [5]  # a word inside a longer word
    assert "检索" in segment("中文检索").split()
    idx.close()


def test_filter_applies_before_top_k(tmp_path):
    idx = _index(tmp_path)
    assert [k for k, _ in idx.search("cat", 1, allowed={2})] == [2]
    assert idx.search("cat", 5, allowed={3}) == []
    assert idx.search("cat", 5, allowed=set()) == []
    unfiltered = dict(idx.search("cat", 5))
    filtered = dict(idx.search("cat", 5, allowed={1, 2}))
    assert filtered == unfiltered  # restriction does not change BM25 scores
    idx.close()


def test_delete_by_key_and_persistence(tmp_path):
    idx = _index(tmp_path)
    idx.delete([2, 42])
    idx.commit()
    assert [k for k, _ in idx.search("cat", 5)] == [1]
    idx.close()
    reopened = LexicalIndex(tmp_path / "lex")
    assert len(reopened) == 4
    assert reopened.keys() == [1, 3, 4, 5]
    reopened.clear()
    reopened.commit()
    assert len(reopened) == 0
    reopened.close()


def test_uncommitted_writes_are_invisible_and_queries_are_not_parsed(tmp_path):
    idx = LexicalIndex(None)
    idx.add([(7, "pending text")])
    assert idx.search("pending", 5) == []
    idx.commit()
    assert idx.search('pending AND "unbalanced (quote: -', 5)[0][0] == 7
    assert idx.search("", 5) == [] and idx.search("...", 5) == []
    idx.close()


def test_unreadable_index_is_a_kb_error(tmp_path):
    import pytest

    from reasonloop.errors import KBError

    (tmp_path / "lex").mkdir()
    (tmp_path / "lex" / "meta.json").write_text("{bad", encoding="utf-8")
    with pytest.raises(KBError, match="unreadable BM25"):
        LexicalIndex(tmp_path / "lex")
