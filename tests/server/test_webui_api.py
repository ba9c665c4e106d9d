"""What the web UI needs of the API: renaming conversations, a document with its chunks, search by
mode, ingest progress while uploading, and the page itself under its Content-Security-Policy."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from reasonloop.config import APIKeySettings
from reasonloop.runs.models import ConversationRecord
from reasonloop.server import create_app
from reasonloop.server.auth import hash_key
from tests.runs.helpers import GatedRunner
from tests.server.helpers import make_settings, serve

pytestmark = pytest.mark.integration

A = {"Authorization": "Bearer key-a"}
B = {"Authorization": "Bearer key-b"}
LONG = " ".join(f"The tide table for pier {i} lists high water at dawn." for i in range(60))


@pytest.fixture
async def served(tmp_path):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    settings = make_settings(
        tmp_path,
        max_upload_bytes=50_000,
        api_keys=[
            APIKeySettings(sha256=hash_key("key-a"), tenant="a"),
            APIKeySettings(sha256=hash_key("key-b"), tenant="b"),
        ],
    )
    app = create_app(settings, runner=GatedRunner())
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield http, app.state.reasonloop


async def test_a_conversation_is_renamed_by_its_tenant_only(served):
    http, state = served
    await state.runs.store.create_conversation(ConversationRecord(conversation_id="conv_r", tenant="a", title="first"))
    await state.runs.store.add_messages("conv_r", [{"role": "user", "content": "hi"}])
    renamed = await http.patch("/v1/conversations/conv_r", json={"title": "  Tide tables 潮汐  "}, headers=A)
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["title"] == "Tide tables 潮汐"
    got = (await http.get("/v1/conversations/conv_r", headers=A)).json()
    assert got["title"] == "Tide tables 潮汐" and [m["content"] for m in got["messages"]] == ["hi"]
    other = await http.patch("/v1/conversations/conv_r", json={"title": "mine now"}, headers=B)
    assert other.status_code == 404 and other.json()["error"]["code"] == "conversation.not_found"
    blank = await http.patch("/v1/conversations/conv_r", json={"title": "   "}, headers=A)
    assert blank.status_code == 422 and blank.json()["error"]["field"] == "title"
    assert (await http.get("/v1/conversations/conv_r", headers=A)).json()["title"] == "Tide tables 潮汐"


async def test_upload_streams_ingest_progress_then_the_report(served):
    http, _ = served
    files = [
        ("files", ("tides.txt", LONG, "text/plain")),
        ("files", ("notes.md", "# Notes\n\nBuoys are red.\n", "text/markdown")),
    ]
    async with http.stream("POST", "/v1/kb/documents", params={"progress": "true"}, files=files, headers=A) as r:
        assert r.status_code == 201
        assert r.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) async for line in r.aiter_lines() if line.strip()]
    progress = [line for line in lines if line["type"] == "progress"]
    assert progress and lines[-1]["type"] == "done"
    assert progress[-1]["chunks_done"] == progress[-1]["chunks_total"] > 1
    assert [p["chunks_done"] for p in progress] == sorted(p["chunks_done"] for p in progress)
    assert lines[-1]["files"] == ["tides.txt", "notes.md"] and len(lines[-1]["report"]["added"]) == 2
    assert len((await http.get("/v1/kb/documents", headers=A)).json()) == 2
    plain = await http.post("/v1/kb/documents", files={"files": ("more.txt", "Gulls nest.", "text/plain")}, headers=A)
    assert plain.status_code == 201 and plain.json()["files"] == ["more.txt"]  # without progress: one JSON answer


async def test_an_unreadable_file_is_reported_in_the_stream(served):
    http, _ = served
    files = {"files": ("broken.pdf", b"%PDF-1.4 not really", "application/pdf")}
    async with http.stream("POST", "/v1/kb/documents", params={"progress": "true"}, files=files, headers=A) as r:
        lines = [json.loads(line) async for line in r.aiter_lines() if line.strip()]
    done = lines[-1]
    assert done["type"] == "done"
    assert list(done["report"]["failed"]) and not done["report"]["added"]


async def test_a_document_is_read_with_its_chunks_by_its_tenant_only(served):
    http, _ = served
    up = await http.post("/v1/kb/documents", files={"files": ("tides.txt", LONG, "text/plain")}, headers=A)
    assert up.status_code == 201
    [row] = (await http.get("/v1/kb/documents", headers=A)).json()
    doc = await http.get(f"/v1/documents/{row['id']}", headers=A)
    assert doc.status_code == 200, doc.text
    body = doc.json()
    assert body["id"] == row["id"] and body["title"] == row["title"] and body["source"].endswith("tides.txt")
    assert len(body["chunks"]) == row["chunks"] > 1
    assert [c["ordinal"] for c in body["chunks"]] == list(range(len(body["chunks"])))
    assert all(LONG[c["start"] : c["end"]] == c["text"] for c in body["chunks"])
    hit = (await http.get("/v1/kb/search", params={"q": "pier 42 high water"}, headers=A)).json()[0]
    assert hit["chunk_id"] in {c["chunk_id"] for c in body["chunks"]}  # a citation's chunk is found there
    other = await http.get(f"/v1/documents/{row['id']}", headers=B)
    assert other.status_code == 404 and other.json()["error"]["code"] == "kb.document_not_found"
    missing = await http.get("/v1/documents/doc_nothing", headers=A)
    assert missing.status_code == 404


async def test_search_by_mode_gives_each_ranking(served):
    http, _ = served
    docs = {
        "a.txt": "Zebra crossings are painted white.",
        "b.txt": "Pedestrians cross the street at marked stripes.",
    }
    for name, text in docs.items():
        assert (await http.post("/v1/kb/documents", files={"files": (name, text, "text/plain")}, headers=A)).is_success
    scores = {}
    for mode in ("lexical", "dense", "hybrid"):
        r = await http.get("/v1/kb/search", params={"q": "zebra", "top_k": 2, "mode": mode}, headers=A)
        assert r.status_code == 200, r.text
        scores[mode] = [(h["source"].rsplit("/", 1)[-1], round(h["score"], 6)) for h in r.json()]
    assert [name for name, _ in scores["lexical"]] == ["a.txt"]  # BM25: only the document with the word
    assert len(scores["dense"]) == 2  # vectors rank every document
    assert len({tuple(s) for s in scores.values()}) == 3  # three rankings, three sets of scores
    bad = await http.get("/v1/kb/search", params={"q": "zebra", "mode": "fuzzy"}, headers=A)
    assert bad.status_code == 422


async def test_the_page_and_its_assets_are_served_under_a_strict_policy(served):
    http, _ = served
    page = await http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "<script>" not in page.text  # every script is a file of this origin
    for asset in ("app.js", "style.css", "vendor/markdown-it.min.js", "vendor/purify.min.js"):
        r = await http.get(f"/ui/{asset}")
        assert r.status_code == 200, asset
        assert r.headers["content-security-policy"] == policy and r.headers["x-content-type-options"] == "nosniff"
    assert (await http.get("/ui/app.js")).headers["content-type"].startswith("text/javascript")
    assert (await http.get("/ui/../pyproject.toml")).status_code == 404
