"""What an answer from evidence says, in the question's language (English or Chinese)."""

from __future__ import annotations

__all__ = ["text"]

_TEXTS = {
    "en": {
        "empty_kb": "Nothing has been ingested yet: the knowledge base is empty. Add documents with "
        "`reasonloop ingest PATH` or the web UI's Documents page, then ask again.",
        "no_sources": "No documents are searched in this run, so there is nothing to answer from.",
        "no_words": "The question has no words to search the documents for.",
        "not_found": 'The documents don\'t say. Searched for "{query}": {detail}.',
        "nothing_found": "no passage was found",
        "names_missing": "no passage mentions {names}",
        "off_topic": "no sentence found speaks of what the question asks",
        "says": 'The documents say: "{quote}" {marker}',
        "partial": 'The documents don\'t mention {words}. The closest they say: "{quote}" {marker}',
        "closest": 'The closest the documents say: "{quote}" {marker}',
        "undecided_yes_no": 'The documents say: "{quote}" {marker}. That does not settle whether the answer is yes or no.',
        "undecided_choice": 'The documents say: "{quote}" {marker}. That does not settle which of {a} and {b} it is.',
        "decided": '{decision}. The documents say: "{quote}" {marker}',
        "yes": "Yes",
        "no": "No",
        "decided_by": "decided by the model's calibrated likelihoods: {why}",
        "undecided_by": "not decided: {why}",
        "note": "{model} is a base model: {strategy} → evidence answer (retrieve, then quote, extract or score "
        "what the passages say)",
    },
    "zh": {
        "empty_kb": "还没有导入任何文档：知识库是空的。请先用 `reasonloop ingest PATH` 或网页的“文档”页添加文档，再提问。",
        "no_sources": "本次运行没有可检索的文档，无从作答。",
        "no_words": "问题中没有可用于检索文档的词语。",
        "not_found": "文档中没有提到。检索了“{query}”：{detail}。",
        "nothing_found": "没有找到任何段落",
        "names_missing": "没有段落提到 {names}",
        "off_topic": "找到的句子都没有谈到问题所问的内容",
        "says": "文档中写道：“{quote}”{marker}",
        "partial": "文档中没有提到 {words}。最接近的内容是：“{quote}”{marker}",
        "closest": "文档中最接近的内容是：“{quote}”{marker}",
        "undecided_yes_no": "文档中写道：“{quote}”{marker}。这不足以判断答案是“是”还是“否”。",
        "undecided_choice": "文档中写道：“{quote}”{marker}。这不足以判断是 {a} 还是 {b}。",
        "decided": "{decision}。文档中写道：“{quote}”{marker}",
        "yes": "是",
        "no": "否",
        "decided_by": "由模型校准后的似然判断：{why}",
        "undecided_by": "未作判断：{why}",
        "note": "{model} 是基础模型：{strategy} → 依据证据作答（先检索，再引用、摘取或评分文段内容）",
    },
}


def text(key: str, language: str, **values: object) -> str:
    """The message ``key`` in ``language`` (English for any language but Chinese)."""
    return _TEXTS["zh" if language == "zh" else "en"][key].format(**values)
