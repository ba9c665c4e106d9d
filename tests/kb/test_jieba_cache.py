"""jieba's dictionary is prepared once per user, then read back from its cache by every process.

Each preparation costs about 2 s of real jieba work, so these tests prepare it only where the
behaviour under test is the preparation."""

from __future__ import annotations

import marshal
import subprocess
import sys

import jieba
import pytest

from reasonloop.kb.retrieval import _jieba, lexical

CACHE = f"jieba-{jieba.__version__}.cache"
QUERY = "中文检索和混合搜索"


def words(tok) -> list[str]:
    return list(tok.cut_for_search(QUERY))


@pytest.mark.integration
def test_the_dictionary_is_prepared_once_into_the_users_cache_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(_jieba, "_tokenizer", None)  # as in a new process
    assert _jieba.cache_dir() == tmp_path / "reasonloop"
    assert lexical.segment(QUERY).split() == ["中文", "检索", "和", "混合", "搜索"]
    cache = tmp_path / "reasonloop" / CACHE
    assert cache.is_file()

    def no_preparing(self, *args):
        raise AssertionError("the dictionary was prepared again instead of read from the cache")

    # A later process reads the cache: jieba neither prepares the dictionary nor reads the
    # file with its own (slow) reader.
    monkeypatch.setattr(jieba.Tokenizer, "gen_pfdict", no_preparing)
    monkeypatch.setattr(jieba.Tokenizer, "initialize", no_preparing)
    again = _jieba.load(cache.parent)
    assert words(again) == words(_jieba.tokenizer())


def test_the_home_cache_is_the_default(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert _jieba.cache_dir() == tmp_path / ".cache" / "reasonloop"


@pytest.mark.parametrize(
    "content",
    [b"\x00not marshal at all", marshal.dumps((0, 0))],
    ids=["garbage", "wrong-shape"],
)
@pytest.mark.integration
def test_an_unreadable_cache_is_prepared_again_and_rewritten(tmp_path, content):
    cache = tmp_path / CACHE
    cache.write_bytes(content)
    tok = _jieba.load(tmp_path)
    assert words(tok)[:2] == ["中文", "检索"]
    assert _jieba._read(cache) is not None  # jieba wrote a good cache over the bad one
    assert words(_jieba.load(tmp_path)) == words(tok)


@pytest.mark.integration
def test_a_cache_directory_that_cannot_be_made_still_segments(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    tok = _jieba.load(blocker / "cache")
    assert words(tok)[:2] == ["中文", "检索"]
    assert blocker.read_text(encoding="utf-8") == "not a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.integration
def test_text_without_chinese_never_imports_jieba():
    probe = (
        "import sys\n"
        "from reasonloop.kb.retrieval.lexical import LexicalIndex, segment\n"
        "idx = LexicalIndex(None)\n"
        "idx.add([(1, 'plain English text')])\n"
        "idx.commit()\n"
        "assert segment('plain English') == 'plain English'\n"
        "assert idx.search('english', 3)\n"
        "print('jieba' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.integration
def test_loading_jieba_prints_no_deprecation_warning(tmp_path):
    # jieba imports pkg_resources, which warns where setuptools still ships it: every command
    # that tokenises Chinese printed that warning to the user.
    code = f"from pathlib import Path; from reasonloop.kb.retrieval._jieba import load; load(Path({str(tmp_path)!r}))"
    done = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "pkg_resources" not in done.stderr
