"""A document's pages over HTTP: page text, the cited span's boxes, the page image; per tenant."""

from __future__ import annotations

import io
import os

import httpx
import pytest

from reasonloop.config import APIKeySettings
from reasonloop.server import create_app
from reasonloop.server.auth import hash_key
from tests.kb import documents as make
from tests.runs.helpers import GatedRunner
from tests.server.helpers import make_settings, serve

A = {"Authorization": "Bearer key-a"}
B = {"Authorization": "Bearer key-b"}
INTRO = "Quarterly results by region."
ROWS = [["Region", "Sales"], ["North", "120"], ["South", "95"]]


@pytest.fixture
async def client(tmp_path):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    settings = make_settings(
        tmp_path,
        api_keys=[
            APIKeySettings(sha256=hash_key("key-a"), tenant="a"),
            APIKeySettings(sha256=hash_key("key-b"), tenant="b"),
        ],
    )
    async with (
        serve(create_app(settings, runner=GatedRunner()), settings) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as http,
    ):
        pdf = make.table_pdf(INTRO, ROWS, "Sales grew in the north.")
        files = [
            ("files", ("report.pdf", pdf, "application/pdf")),
            ("files", ("notes.txt", b"Plain notes without pages.", "text/plain")),
        ]
        up = await http.post("/v1/kb/documents", files=files, headers=A)
        assert up.status_code == 201, up.text
        docs = {d["source"].rsplit("/", 1)[-1]: d["id"] for d in (await http.get("/v1/kb/documents", headers=A)).json()}
        yield http, docs


async def test_page_text_and_the_boxes_of_a_cited_span(client):
    http, docs = client
    hit = (await http.get("/v1/kb/search", params={"q": "North sales region", "top_k": 1}, headers=A)).json()[0]
    page, start, end = hit["metadata"]["page"], hit["metadata"]["start"], hit["metadata"]["end"]
    r = await http.get(
        f"/v1/documents/{docs['report.pdf']}/pages/{page}", params={"start": start, "end": end}, headers=A
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["text"][start:end] == hit["text"] == body["span"]["text"]
    assert body["pages"] == [1] and body["type"] == "pdf"
    assert body["image"] == f"/v1/documents/{docs['report.pdf']}/pages/1/image"
    assert body["boxes"] and all(
        0 <= b["x0"] < b["x1"] <= 1 and 0 <= b["top"] < b["bottom"] <= 1 for b in body["boxes"]
    )
    # The intro line alone: one box, at the top of the page, where reportlab drew it.
    intro = body["text"].index(INTRO)
    one = (
        await http.get(
            f"/v1/documents/{docs['report.pdf']}/pages/1", params={"start": intro, "end": intro + len(INTRO)}, headers=A
        )
    ).json()["boxes"]
    assert len(one) == 1 and one[0]["top"] < 0.15 and one[0]["x0"] < 0.2


async def test_page_image_is_a_png_with_the_span_highlighted(client):
    from PIL import Image

    http, docs = client
    url = f"/v1/documents/{docs['report.pdf']}/pages/1/image"
    plain = await http.get(url, params={"scale": 1}, headers=A)
    assert plain.status_code == 200 and plain.headers["content-type"] == "image/png"
    text = (await http.get(f"/v1/documents/{docs['report.pdf']}/pages/1", headers=A)).json()["text"]
    start = text.index(INTRO)
    marked = await http.get(url, params={"scale": 1, "start": start, "end": start + len(INTRO)}, headers=A)
    a = Image.open(io.BytesIO(plain.content)).convert("RGB")
    b = Image.open(io.BytesIO(marked.content)).convert("RGB")
    assert a.size == b.size and abs(a.width - 595) <= 1 and abs(a.height - 842) <= 1  # A4, a pixel per PDF unit
    changed = [
        (x, y) for x in range(0, a.width, 3) for y in range(0, a.height, 3) if a.getpixel((x, y)) != b.getpixel((x, y))
    ]
    assert changed and max(y for _, y in changed) < 0.15 * a.height


async def test_a_document_without_pages_is_page_one_and_has_no_image(client):
    http, docs = client
    body = (await http.get(f"/v1/documents/{docs['notes.txt']}/pages/1", headers=A)).json()
    assert body["text"] == "Plain notes without pages." and body["image"] is None and body["pages"] == [1]
    image = await http.get(f"/v1/documents/{docs['notes.txt']}/pages/1/image", headers=A)
    assert image.status_code == 404 and image.json()["error"]["code"] == "kb.document_not_found"


async def test_other_tenants_and_anonymous_callers_see_nothing(client):
    http, docs = client
    for path in (f"/v1/documents/{docs['report.pdf']}/pages/1", f"/v1/documents/{docs['report.pdf']}/pages/1/image"):
        other = await http.get(path, headers=B)
        assert other.status_code == 404 and other.json()["error"]["code"] == "kb.document_not_found"
        assert (await http.get(path)).status_code == 401


async def test_bad_pages_and_spans_are_clear_errors(client):
    http, docs = client
    base = f"/v1/documents/{docs['report.pdf']}/pages"
    missing = await http.get(f"{base}/7", headers=A)
    assert missing.status_code == 404 and "has no page 7" in missing.json()["error"]["message"]
    outside = await http.get(f"{base}/1", params={"start": 5, "end": 10_000}, headers=A)
    assert outside.status_code == 422 and "outside the page" in outside.json()["error"]["message"]
    assert (await http.get(f"{base}/0", headers=A)).status_code == 422
    assert (await http.get(f"{base}/1", params={"start": 9, "end": 3}, headers=A)).status_code == 422
