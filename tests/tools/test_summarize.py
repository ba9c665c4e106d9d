from reasonloop.events import AnswerDelta
from reasonloop.kb.base import Hit
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.tools.base import RunScope, ToolContext
from reasonloop.tools.summarize import SummarizeTool


class ListRetriever:
    """A retriever over fixed hits (keeps their order, honours top_k)."""

    def __init__(self, hits):
        self.hits = hits
        self.queries = []

    async def search(self, query, top_k=10, filters=None):
        self.queries.append((query, top_k))
        return self.hits[:top_k]


def hit(chunk, doc, text, source=None):
    return Hit(chunk_id=chunk, document_id=doc, source=source or f"{doc}.md", title=doc.title(), text=text)


class Numbering:
    """An evidence log shared with other tools of the run."""

    def __init__(self, start):
        self.next = start

    def add(self, h):
        self.next += 1
        return self.next


async def test_retrieves_distinct_documents_then_summarises_with_citations():
    r1 = ListRetriever(
        [hit("a1", "alpha", "Alpha says X."), hit("a2", "alpha", "More alpha."), hit("b1", "beta", "Beta says Y.")]
    )
    r2 = ListRetriever([hit("g1", "gamma", "Gamma says Z.")])
    llm = ScriptedProvider(replies=["Alpha says X [1] while gamma says Z [2]."])
    ctx = ToolContext(scope=RunScope(retrievers=[r1, r2], llm=llm))
    out = await SummarizeTool().invoke({"topic": "letters", "max_docs": 2}, ctx)
    assert out.ok, out.error
    assert out.text == "Alpha says X [1] while gamma says Z [2]."
    assert [c.document_id for c in out.citations] == ["alpha", "gamma"]
    prompt = llm.prompts[0]
    assert "[1] Alpha\nAlpha says X." in prompt[1].content and "[2] Gamma\nGamma says Z." in prompt[1].content
    assert "Beta" not in prompt[1].content and "More alpha" not in prompt[1].content
    assert r1.queries == [("letters", 6)]


async def test_numbers_follow_the_run_evidence_log_and_unused_citations_are_dropped():
    r = ListRetriever([hit("a1", "alpha", "A."), hit("b1", "beta", "B.")])
    llm = ScriptedProvider(replies=["Only beta matters [8]."])
    ctx = ToolContext(scope=RunScope(retrievers=[r], llm=llm, evidence=Numbering(6)))
    out = await SummarizeTool().invoke({"topic": "t"}, ctx)
    assert [c.marker for c in out.citations] == [8]
    assert "[7] Alpha" in llm.prompts[0][1].content


async def test_streams_answer_deltas_when_it_is_the_final_answer():
    events = []

    async def emit(event):
        events.append(event)

    r = ListRetriever([hit("a1", "alpha", "A.")])
    llm = ScriptedProvider(replies=["A long summary of alpha [1]."], chunk_size=5)
    ctx = ToolContext(emit=emit, depth=1, scope=RunScope(retrievers=[r], llm=llm, stream_answer=True))
    out = await SummarizeTool().invoke({"topic": "t"}, ctx)
    assert len(events) > 2 and all(isinstance(e, AnswerDelta) and e.depth == 1 for e in events)
    assert "".join(e.text for e in events) == out.text


async def test_no_streaming_unless_asked():
    events = []

    async def emit(event):
        events.append(event)

    ctx = ToolContext(
        emit=emit,
        scope=RunScope(retrievers=[ListRetriever([hit("a", "a", "x")])], llm=ScriptedProvider(replies=["s [1]"])),
    )
    assert (await SummarizeTool().invoke({"topic": "t"}, ctx)).ok
    assert events == []


async def test_nothing_found_skips_the_llm():
    llm = ScriptedProvider(replies=["should not be used"])
    out = await SummarizeTool().invoke(
        {"topic": "void"}, ToolContext(scope=RunScope(retrievers=[ListRetriever([])], llm=llm))
    )
    assert out.ok and out.text == "No documents about 'void' to summarise."
    assert not llm.prompts


async def test_failures_are_observations():
    class Broken:
        async def search(self, query, top_k=10, filters=None):
            raise OSError("index gone")

    llm = ScriptedProvider(replies=["x"])
    no_llm = await SummarizeTool().invoke({"topic": "t"}, ToolContext(scope=RunScope(retrievers=[])))
    assert no_llm.error["code"] == "tool.unavailable"
    broken = await SummarizeTool().invoke({"topic": "t"}, ToolContext(scope=RunScope(retrievers=[Broken()], llm=llm)))
    assert broken.error["code"] == "tool.error" and "index gone" in broken.error["error"]
    half = ListRetriever([hit("a", "alpha", "A.")])
    ok = await SummarizeTool().invoke({"topic": "t"}, ToolContext(scope=RunScope(retrievers=[Broken(), half], llm=llm)))
    assert ok.ok
    bad_args = await SummarizeTool().invoke({"topic": "", "max_docs": 0}, ToolContext())
    assert bad_args.error["code"] == "tool.invalid_arguments"


async def test_its_model_call_counts_in_the_runs_usage():
    from reasonloop.events import Usage

    llm = ScriptedProvider(replies=["Alpha says X [1]."])
    usage = Usage(llm_calls=2, prompt_tokens=10, completion_tokens=5)
    ctx = ToolContext(
        scope=RunScope(retrievers=[ListRetriever([hit("a1", "alpha", "Alpha says X.")])], llm=llm), usage=usage
    )
    assert (await SummarizeTool().invoke({"topic": "letters"}, ctx)).ok
    spent = llm.calls[0]
    assert usage == Usage(
        llm_calls=3, prompt_tokens=10 + spent.prompt_tokens, completion_tokens=5 + spent.completion_tokens
    )
