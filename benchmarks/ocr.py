"""OCR engines on known text, Chinese and English: character and word accuracy and speed, side by side.

Pages are made by rendering real sentences (SciFact abstracts, CMRC 2018 passages, from
../shared/data) with Noto CJK into page-sized images (as a 150 dpi scan would look) and into
image-only PDFs; each engine reads them back and is scored on
character accuracy = 1 - edit distance / reference length (whitespace ignored, so a space OCR adds
or drops between Chinese characters costs nothing); on word accuracy = 1 - word-level edit
distance / reference words, words being what whitespace separates (English only: a word that loses
the space to its neighbour is wrong, as keyword search sees it); on spaces between two Chinese
characters (there are none in the reference: each one splits a word); and on seconds per page
(wall and CPU).

Engines: RapidOCR (``rapidocr-onnxruntime``, PP-OCRv4 models in the wheel; what the loaders use)
as reasonloop drives it, also with the recogniser's own spaces only (``space_words=False``: the
text before word gaps were read from the page, for a before/after in one run), and Debian's tesseract 5 CLI with ``chi_sim+eng`` (``apt-get install
tesseract-ocr tesseract-ocr-chi-sim``; reported missing if absent). PDFs go through the real loader
(render at 200 dpi, then RapidOCR).

Run::

    python benchmarks/ocr.py --quick      # 2 pages per language
    python benchmarks/ocr.py              # 6 pages per language
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from reasonloop.kb.ingest.loaders import load_bytes
from reasonloop.kb.ingest.loaders.ocr import recognize

ROOT = Path(__file__).resolve().parents[1]
CJK_FONT = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
"""Debian's fonts-noto-cjk."""

DATA = ROOT.parent / "shared" / "data"
LINE_CHARS = {"en": 70, "zh": 32}
LINES_PER_PAGE = 22


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def _wrap(text: str, width: int, lang: str) -> list[str]:
    if lang == "zh":
        return [text[i : i + width] for i in range(0, len(text), width)]
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line] if line else lines


def pages(lang: str, count: int) -> list[list[str]]:
    """``count`` pages of known lines in ``lang``."""
    if lang == "en":
        texts = [json.loads(x)["text"] for x in (DATA / "beir_scifact" / "corpus.jsonl").open(encoding="utf-8")][:200]
    else:
        raw = json.loads((DATA / "chinese" / "cmrc2018_dev" / "cmrc2018_dev.squad-style.json").read_text("utf-8"))
        texts = [p["context"] for d in raw["data"] for p in d["paragraphs"]][:200]
    lines = [line for t in texts for line in _wrap(" ".join(t.split()), LINE_CHARS[lang], lang)]
    return [lines[i * LINES_PER_PAGE : (i + 1) * LINES_PER_PAGE] for i in range(count)]


def render(lines: list[str]):
    """An A4 page at 150 dpi with ``lines`` in 11-point Noto Sans CJK."""
    from PIL import Image, ImageDraw

    width, height, size = 1240, 1754, 23
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    from PIL import ImageFont

    font = ImageFont.truetype(CJK_FONT, size)
    for i, line in enumerate(lines):
        draw.text((110, 120 + i * int(size * 1.9)), line, fill="black", font=font)
    return image


def distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def accuracy(reference: str, got: str) -> float:
    ref, out = "".join(reference.split()), "".join(got.split())
    return max(0.0, 1 - distance(ref, out) / max(len(ref), 1))


def word_accuracy(reference: str, got: str) -> float:
    ref = reference.split()
    return max(0.0, 1 - distance(ref, got.split()) / max(len(ref), 1))


_HAN_SPACE = re.compile(r"(?<=[\u3400-\u9fff\uf900-\ufaff])[ \t]+(?=[\u3400-\u9fff\uf900-\ufaff])")


def han_spaces(text: str) -> int:
    """Spaces standing between two Chinese characters."""
    return len(_HAN_SPACE.findall(text))


def rapidocr_image(image) -> str:
    return "\n".join(line.text for line in recognize(image))


def rapidocr_image_unspaced(image) -> str:
    return "\n".join(line.text for line in recognize(image, space_words=False))


def tesseract_image(image) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "page.png"
        image.save(path)
        done = subprocess.run(
            ["tesseract", str(path), "stdout", "-l", "chi_sim+eng", "--psm", "6"],
            capture_output=True,
            text=True,
            check=True,
        )
    return done.stdout


def loader_pdf(image) -> str:
    buf = io.BytesIO()
    image.save(buf, "PDF", resolution=150)
    return load_bytes(buf.getvalue(), "scan.pdf", suffix=".pdf")[0].text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 pages per language")
    parser.add_argument("--pages", type=int, default=None)
    args = parser.parse_args()
    count = args.pages or (2 if args.quick else 6)
    engines = {
        "rapidocr (image, recogniser's spaces)": rapidocr_image_unspaced,
        "rapidocr (image)": rapidocr_image,
        "rapidocr (image-only PDF, loader)": loader_pdf,
    }
    if shutil.which("tesseract"):
        engines["tesseract chi_sim+eng (image)"] = tesseract_image
    else:
        print("tesseract: not installed (apt-get install tesseract-ocr tesseract-ocr-chi-sim): not measured")
    rapid_warm = recognize(render(["warm up"]))  # model load is not per page
    del rapid_warm
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; 2 cores")
    print(
        f"{'engine':38} {'lang':4} {'pages':>5} {'char acc':>9} {'word acc':>9} {'han spaces':>10} "
        f"{'s/page':>7} {'cpu s/page':>10}"
    )
    for lang in ("en", "zh"):
        sets = pages(lang, count)
        images = [render(p) for p in sets]
        for name, fn in engines.items():
            accs, words, spaces, wall, cpu = [], [], 0, 0.0, 0.0
            for lines, image in zip(sets, images, strict=True):
                t0, c0 = time.perf_counter(), _cpu()
                got = fn(image)
                wall += time.perf_counter() - t0
                cpu += _cpu() - c0
                accs.append(accuracy("\n".join(lines), got))
                words.append(word_accuracy("\n".join(lines), got))
                spaces += han_spaces(got)
            n = len(sets)
            word = f"{sum(words) / n:9.4f}" if lang == "en" else f"{'-':>9}"
            print(f"{name:38} {lang:4} {n:5d} {sum(accs) / n:9.4f} {word} {spaces:10d} {wall / n:7.2f} {cpu / n:10.2f}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
