"""Knowledge-base endpoints over the real KnowledgeBase: upload, list, search, stats, delete, limits."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from reasonloop.config import APIKeySettings
from reasonloop.server import create_app
from reasonloop.server.auth import hash_key
from reasonloop.server.tenancy import safe_filename, tenant_kb_path
from tests.runs.helpers import GatedRunner
from tests.server.helpers import make_settings, serve

A = {"Authorization": "Bearer key-a"}
B = {"Authorization": "Bearer key-b"}
DOC = "The lighthouse keeper logs every ship that passes the northern reef at night.\n"


@pytest.fixture
async def client(tmp_path):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    settings = make_settings(
        tmp_path,
        max_upload_bytes=2000,
        api_keys=[
            APIKeySettings(sha256=hash_key("key-a"), tenant="a"),
            APIKeySettings(sha256=hash_key("key-b"), tenant="b"),
        ],
    )
    async with (
        serve(create_app(settings, runner=GatedRunner()), settings) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as http,
    ):
        yield http, tmp_path


@pytest.mark.integration
async def test_upload_search_stats_delete(client):
    http, tmp_path = client
    up = await http.post("/v1/kb/documents", files={"files": ("../../outside/ships.txt", DOC, "text/plain")}, headers=A)
    assert up.status_code == 201, up.text
    assert up.json()["files"] == ["ships.txt"]
    stored = tmp_path / "kb" / "tenants" / "a" / "uploads" / "ships.txt"
    assert stored.read_text() == DOC
    assert not (tmp_path / "outside").exists()
    docs = (await http.get("/v1/kb/documents", headers=A)).json()
    assert len(docs) == 1 and docs[0]["source"].endswith("ships.txt")
    hits = (await http.get("/v1/kb/search", params={"q": "who logs ships at the reef", "top_k": 3}, headers=A)).json()
    assert hits and "lighthouse" in hits[0]["text"]
    assert (await http.get("/v1/kb/stats", headers=A)).json()["documents"] == 1
    assert (await http.get("/v1/kb/documents", headers=B)).json() == []  # another tenant's knowledge base
    assert (await http.get("/v1/kb/search", params={"q": "lighthouse"}, headers=B)).json() == []
    deleted = await http.delete(f"/v1/kb/documents/{docs[0]['id']}", headers=A)
    assert deleted.status_code == 200
    again = await http.delete(f"/v1/kb/documents/{docs[0]['id']}", headers=A)
    assert again.status_code == 404 and again.json()["error"]["code"] == "kb.document_not_found"


@pytest.mark.integration
async def test_upload_over_the_limit_is_413_and_leaves_nothing(client):
    http, tmp_path = client
    big = await http.post("/v1/kb/documents", files={"files": ("big.txt", "x" * 5000, "text/plain")}, headers=A)
    assert big.status_code == 413 and big.json()["error"]["code"] == "kb.upload_too_large"
    uploads = tmp_path / "kb" / "tenants" / "a" / "uploads"
    assert not uploads.exists() or list(uploads.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../../etc/passwd", "passwd"),
        ("..\\..\\windows\\system.ini", "system.ini"),
        ("..", "upload"),
        (".hidden", "hidden"),
        ("a/b/../c.txt", "c.txt"),
        ("evil\x00name.txt", "evilname.txt"),
        ("报告 2024.pdf", "报告 2024.pdf"),
        ("semi;colon|pipe.md", "semi_colon_pipe.md"),
        ("", "upload"),
    ],
)
def test_safe_filename(name, expected):
    assert safe_filename(name) == expected


@pytest.mark.parametrize("name", ["文" * 200 + ".pdf", "é" * 150 + ".txt", "a" * 300 + ".md", "报" * 90])
def test_safe_filenames_fit_a_file_system_name_and_keep_their_extension(name):
    safe = safe_filename(name)
    assert len(safe.encode()) <= 200 and safe[:1] == name[:1]
    assert Path(safe).suffix == Path(name).suffix


def test_every_tenant_has_a_knowledge_base_of_its_own(tmp_path):
    settings = make_settings(tmp_path)
    tenants = ["acme/eu", "eu", "a:b", "a_b", "..", "upload", "x" * 300, "x" * 301, "北京", "default"]
    paths = [tenant_kb_path(settings, t) for t in tenants]
    assert len(set(paths)) == len(tenants)
    root = tmp_path / "kb"
    assert paths[1] == root / "tenants" / "eu" and paths[-1] == root  # names that are safe already stay as they are
    assert all(p == root or p.parent == root / "tenants" for p in paths)
    assert all(len(p.name.encode()) <= 255 for p in paths)


@pytest.mark.integration
async def test_long_non_ascii_names_are_stored(client):
    http, tmp_path = client
    name = "灯塔" * 100 + ".txt"
    up = await http.post("/v1/kb/documents", files={"files": (name, DOC, "text/plain")}, headers=A)
    assert up.status_code == 201, up.text
    stored = up.json()["files"][0]
    assert stored.endswith(".txt") and (tmp_path / "kb" / "tenants" / "a" / "uploads" / stored).read_text() == DOC


@pytest.mark.integration
async def test_a_chunked_body_over_the_limit_is_refused_as_it_arrives(client):
    http, tmp_path = client
    sent = 0

    async def body():
        nonlocal sent
        yield b'--zzz\r\nContent-Disposition: form-data; name="files"; filename="big.txt"\r\n\r\n'
        for _ in range(200):  # 200 x 4 KiB, with no Content-Length: far over the 2000 x 32 bytes allowed
            sent += 1
            yield b"x" * 4096
        yield b"\r\n--zzz--\r\n"

    response = await http.post(
        "/v1/kb/documents", content=body(), headers={**A, "Content-Type": "multipart/form-data; boundary=zzz"}
    )
    assert response.status_code == 413 and response.json()["error"]["code"] == "kb.upload_too_large"
    assert "upload body" in response.json()["error"]["message"]  # the guard's refusal, not the route's
    uploads = tmp_path / "kb" / "tenants" / "a" / "uploads"
    assert not uploads.exists() or list(uploads.iterdir()) == []


@pytest.mark.integration
async def test_an_oversized_body_is_refused_before_it_is_read(client):
    http, _ = client
    body = b"x" * (2000 * 32 + 70 * 1024)
    response = await http.post(
        "/v1/kb/documents",
        content=body,
        headers={**A, "Content-Type": "multipart/form-data; boundary=zzz"},
    )
    assert response.status_code == 413 and response.json()["error"]["code"] == "kb.upload_too_large"


@pytest.mark.integration
async def test_search_takes_the_rerank_options(client):
    http, _ = client
    await http.post("/v1/kb/documents", files={"files": ("ships.txt", DOC, "text/plain")}, headers=A)
    hits = (await http.get("/v1/kb/search", params={"q": "ships", "rerank": "false"}, headers=A)).json()
    assert hits and hits[0]["rerank_score"] is None and "score" in hits[0]
    refused = await http.get("/v1/kb/search", params={"q": "ships", "rerank": "true"}, headers=A)
    assert refused.status_code == 422 and "no reranker is configured" in refused.json()["error"]["message"]
    bad = await http.get("/v1/kb/search", params={"q": "ships", "candidates": 0}, headers=A)
    assert bad.status_code == 422


@pytest.fixture
async def roomy(tmp_path):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    settings = make_settings(
        tmp_path, max_upload_bytes=5_000_000, api_keys=[APIKeySettings(sha256=hash_key("key-a"), tenant="a")]
    )
    async with (
        serve(create_app(settings, runner=GatedRunner()), settings) as url,
        httpx.AsyncClient(base_url=url, timeout=120) as http,
    ):
        yield http, tmp_path


@pytest.mark.integration
@pytest.mark.parametrize("progress", [False, True])
async def test_an_upload_answers_per_file_and_keeps_no_file_it_could_not_ingest(roomy, progress):
    import json

    from tests.kb import hostile

    http, tmp_path = roomy
    files = [
        ("files", ("ships.txt", DOC, "text/plain")),
        ("files", ("laughs.docx", hostile.laughs("docx", "Tanker pilots."), "application/octet-stream")),
        ("files", ("bomb.xlsx", hostile.zip_bomb("xlsx", "Quarry output."), "application/octet-stream")),
        ("files", ("huge.png", hostile.png_bomb(), "image/png")),
        ("files", ("notes.docx", hostile.good("docx", "The ferry leaves at noon."), "application/octet-stream")),
    ]
    up = await http.post("/v1/kb/documents", files=files, headers=A, params={"progress": progress})
    assert up.status_code == 201 and "json" in up.headers["content-type"], up.text
    body = json.loads(up.text.splitlines()[-1]) if progress else up.json()
    results = {r["file"]: r for r in body["results"]}
    assert results["ships.txt"]["status"] == "added" and results["notes.docx"]["status"] == "added"
    assert results["laughs.docx"] == {
        "file": "laughs.docx",
        "status": "failed",
        "reason": "entity expansion refused (word/document.xml)",
    }
    assert results["bomb.xlsx"]["reason"].startswith("too large when unpacked: 3.0 GB > 256 MB")
    assert results["huge.png"]["reason"].startswith("image of 900 million pixels exceeds the limit")
    uploads = tmp_path / "kb" / "tenants" / "a" / "uploads"
    assert sorted(p.name for p in uploads.iterdir()) == ["notes.docx", "ships.txt"]
    hits = (await http.get("/v1/kb/search", params={"q": "when does the ferry leave", "top_k": 1}, headers=A)).json()
    assert hits and "ferry" in hits[0]["text"]
