"""A document's pages over HTTP: page text, the cited span's boxes, the page image; per tenant."""

from __future__ import annotations

import io
import math
import os
from pathlib import Path

import httpx
import pytest

from reasonloop.config import APIKeySettings
from reasonloop.kb.ingest.loaders.pdf import fit_scale
from reasonloop.server import create_app
from reasonloop.server.auth import hash_key
from reasonloop.server.routes.pages import MAX_PIXELS
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


@pytest.mark.integration
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


@pytest.mark.integration
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


@pytest.mark.integration
async def test_a_document_without_pages_is_page_one_and_has_no_image(client):
    http, docs = client
    body = (await http.get(f"/v1/documents/{docs['notes.txt']}/pages/1", headers=A)).json()
    assert body["text"] == "Plain notes without pages." and body["image"] is None and body["pages"] == [1]
    image = await http.get(f"/v1/documents/{docs['notes.txt']}/pages/1/image", headers=A)
    assert image.status_code == 404 and image.json()["error"]["code"] == "kb.document_not_found"


@pytest.mark.integration
async def test_other_tenants_and_anonymous_callers_see_nothing(client):
    http, docs = client
    for path in (f"/v1/documents/{docs['report.pdf']}/pages/1", f"/v1/documents/{docs['report.pdf']}/pages/1/image"):
        other = await http.get(path, headers=B)
        assert other.status_code == 404 and other.json()["error"]["code"] == "kb.document_not_found"
        assert (await http.get(path)).status_code == 401


@pytest.mark.integration
async def test_bad_pages_and_spans_are_clear_errors(client):
    http, docs = client
    base = f"/v1/documents/{docs['report.pdf']}/pages"
    missing = await http.get(f"{base}/7", headers=A)
    assert missing.status_code == 404 and "has no page 7" in missing.json()["error"]["message"]
    outside = await http.get(f"{base}/1", params={"start": 5, "end": 10_000}, headers=A)
    assert outside.status_code == 422 and "outside the page" in outside.json()["error"]["message"]
    assert (await http.get(f"{base}/0", headers=A)).status_code == 422
    assert (await http.get(f"{base}/1", params={"start": 9, "end": 3}, headers=A)).status_code == 422
    for span in ({"start": 5, "end": 10_000}, {"start": 9, "end": 3}, {"start": -1, "end": 3}):
        image = await http.get(f"{base}/1/image", params=span, headers=A)
        assert image.status_code == 422 and image.headers["content-type"] == "application/json", span
    outside = await http.get(f"{base}/1/image", params={"start": 5, "end": 10_000}, headers=A)
    assert "outside the page" in outside.json()["error"]["message"]
    assert (await http.get(f"{base}/1/image", params={"scale": 5}, headers=A)).status_code == 422


def poster_pdf(side: float, line: str) -> bytes:
    """One square page ``side`` PDF units wide, ``line`` in large type near its top-left corner."""
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=(side, side))
    c.setFont("Helvetica", 400)
    c.drawString(300, side - 800, line)
    c.showPage()
    c.save()
    return buf.getvalue()


@pytest.mark.integration
async def test_a_huge_page_renders_within_the_pixel_limit_with_its_span_in_place(client):
    import numpy as np
    from PIL import Image

    http, _ = client
    line = "Harbour poster"
    up = await http.post(
        "/v1/kb/documents", files=[("files", ("poster.pdf", poster_pdf(14_400, line), "application/pdf"))], headers=A
    )
    assert up.status_code == 201, up.text
    poster = next(d["id"] for d in (await http.get("/v1/kb/documents", headers=A)).json() if "poster" in d["source"])
    text = (await http.get(f"/v1/documents/{poster}/pages/1", headers=A)).json()["text"]
    start = text.index(line)
    r = await http.get(
        f"/v1/documents/{poster}/pages/1/image",
        params={"scale": 4, "start": start, "end": start + len(line)},
        headers=A,
    )
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(r.content)).convert("RGB")
    # 14,400 units a side at scale 4 would be 57,600 pixels a side, 3.3 billion pixels.
    assert image.width * image.height <= MAX_PIXELS
    assert image.width == image.height and image.width * image.height > 0.95 * MAX_PIXELS
    pixels = np.asarray(image).astype(int)
    yellow = (pixels[..., 0] > 200) & (pixels[..., 1] > 200) & (pixels[..., 2] < 200)
    ys, xs = np.nonzero(yellow)
    assert len(ys)  # the span is highlighted, where the line is: near the top-left corner
    assert xs.min() >= 0.015 * image.width and xs.max() < 0.5 * image.width
    assert ys.min() >= 0.01 * image.height and ys.max() < 0.1 * image.height


def test_a_page_is_rendered_at_its_scale_unless_that_makes_too_many_pixels():
    assert fit_scale(4, 595.28, 841.89, MAX_PIXELS) == 4  # an A4 page at the largest scale
    assert fit_scale(4, 612, 792, MAX_PIXELS) == 4  # US Letter
    for width, height in ((14_400, 14_400), (14_400, 200), (3, 14_400)):
        scale = fit_scale(4, width, height, MAX_PIXELS)
        pixels = math.ceil(width * scale) * math.ceil(height * scale)
        assert 0.95 * MAX_PIXELS < pixels <= MAX_PIXELS or scale == 4, (width, height, scale)


def _peak_rss_mb(reset: bool = False) -> float:
    """This process's peak resident memory in MB (``reset``: start measuring anew, Linux 4.0+)."""
    if reset:
        Path("/proc/self/clear_refs").write_text("5")
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.integration
async def test_a_huge_scanned_page_is_read_and_shown_within_the_pixel_limits(client):
    """A 14,400-unit image-only page: OCR'd at ingest within [kb.limits] max_pixels (in a worker),
    OCR'd again for a span's boxes and rendered within MAX_PIXELS in the server; the image request
    adds little to the server's peak memory (the page is 40,000 × 40,000 pixels at 200 dpi: 4.8 GB
    as RGB)."""
    from PIL import Image

    from tests.kb.hostile import poster_scan

    http, _ = client
    up = await http.post(
        "/v1/kb/documents",
        files=[("files", ("scan.pdf", poster_scan(["Poster headline about rivers"]), "application/pdf"))],
        headers=A,
    )
    assert up.status_code == 201 and up.json()["results"][0]["status"] == "added", up.text
    scan = next(
        d["id"] for d in (await http.get("/v1/kb/documents", headers=A)).json() if d["source"].endswith("scan.pdf")
    )
    page = await http.get(f"/v1/documents/{scan}/pages/1", params={"start": 0, "end": 10}, headers=A)
    assert page.status_code == 200 and "rivers" in page.json()["text"].lower() and page.json()["boxes"]
    before = _peak_rss_mb(reset=True)
    image = await http.get(f"/v1/documents/{scan}/pages/1/image", params={"scale": 4}, headers=A)
    assert image.status_code == 200
    shown = Image.open(io.BytesIO(image.content))
    assert shown.width * shown.height <= MAX_PIXELS
    assert _peak_rss_mb() - before < 400  # the render at 8.5 million pixels; uncapped it is 4.8 GB
