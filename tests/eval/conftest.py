from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kb.helpers import HashEmbedder

CORPUS = [
    {"id": "tower", "title": "Eiffel Tower", "text": "The Eiffel Tower in Paris was completed in 1889."},
    {"id": "lake", "title": "Lake Baikal", "text": "Lake Baikal is a rift lake in Siberia, Russia."},
    {"id": "wall", "title": "长城", "text": "长城是中国古代的军事防御工程，始建于春秋战国时期。"},
]
QUESTIONS = [
    {"id": "q1", "question": "When was the Eiffel Tower completed? ", "answers": ["1889"], "gold_ids": ["tower"]},
    {"id": "q2", "question": "In which country is Lake Baikal?", "answers": ["Russia"], "gold_ids": ["lake"]},
    {"id": "q3", "question": "长城始建于什么时期？", "answers": ["春秋战国时期"], "gold_ids": ["wall"]},
]


@pytest.fixture
def qa_files(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in CORPUS), encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS), encoding="utf-8")
    return questions, corpus


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()
