// The knowledge base: drag-and-drop upload with a progress bar per file (bytes sent, then chunks
// embedded), the document list, statistics, a document's text, the citation view and the
// retrieval test (lexical, dense and hybrid hits side by side).

import { api, apiBlob, ApiError, uploadFile } from "./api.js";
import { el, formatBytes, formatTime, markRange } from "./render.js";
import { t } from "./i18n.js";

const $ = (id) => document.getElementById(id);

export async function refreshDocuments() {
  const [docs, stats] = await Promise.all([api("v1/kb/documents"), api("v1/kb/stats")]);
  const rows = $("doc-rows");
  rows.replaceChildren();
  for (const d of docs) {
    const tr = el("tr");
    tr.dataset.id = d.id;
    const titleCell = el("td");
    const link = el("a", null, d.title || d.source.split("/").pop());
    link.href = `#/documents/${encodeURIComponent(d.id)}`;
    titleCell.append(link);
    const del = el("button", "link danger", t("docs.delete"));
    del.type = "button";
    del.addEventListener("click", async () => {
      if (!window.confirm(t("docs.confirmDelete"))) return;
      await api(`v1/kb/documents/${encodeURIComponent(d.id)}`, { method: "DELETE" });
      refreshDocuments();
    });
    const delCell = el("td");
    delCell.append(del);
    tr.append(titleCell, el("td", "source", d.source), el("td", "num", d.chunks), el("td", null, formatTime(d.updated)), delCell);
    rows.append(tr);
  }
  $("docs-empty").hidden = docs.length > 0;
  $("kb-stats").textContent = t("docs.stats", {
    docs: stats.documents, chunks: stats.chunks, bytes: formatBytes(stats.bytes), model: stats.embedding_model || "–",
  });
}

function uploadRow(file) {
  const item = el("li", "upload");
  item.append(el("span", "name", file.name), el("progress"), el("span", "state", t("up.uploading", { pct: 0 })));
  item.querySelector("progress").max = 1;
  item.querySelector("progress").value = 0;
  $("uploads").prepend(item);
  return item;
}

async function uploadOne(file) {
  const item = uploadRow(file);
  const bar = item.querySelector("progress");
  const state = item.querySelector(".state");
  item.dataset.state = "uploading";
  try {
    const done = await uploadFile(file, (p) => {
      if (p.phase === "upload") {
        const pct = p.total ? Math.round((100 * p.loaded) / p.total) : 0;
        bar.value = p.total ? (0.3 * p.loaded) / p.total : 0;
        state.textContent = t("up.uploading", { pct });
      } else if (p.type === "progress") {
        item.dataset.state = "ingesting";
        if (p.chunks_total) {
          bar.value = 0.3 + (0.7 * p.chunks_done) / p.chunks_total;
          state.textContent = t("up.ingesting", { done: p.chunks_done, total: p.chunks_total });
        } else {
          state.textContent = t("up.reading");
        }
      }
    });
    const report = done.report || {};
    const failed = Object.values(report.failed || {});
    bar.value = failed.length ? 0 : 1;
    if (failed.length) {
      item.dataset.state = "failed";
      state.textContent = t("up.failed", { reason: failed[0] });
    } else if ((report.unchanged || []).length && !(report.added || []).length && !(report.updated || []).length) {
      item.dataset.state = "done";
      state.textContent = t("up.unchanged");
    } else {
      item.dataset.state = "done";
      state.textContent = t("up.done", { chunks: report.chunks_added ?? 0 });
    }
  } catch (err) {
    item.dataset.state = "failed";
    bar.value = 0;
    const tooLarge = err instanceof ApiError && err.status === 413;
    const limit = err.body && err.body.error && err.body.error.limit;
    state.textContent = tooLarge ? t("up.tooLarge", { limit: formatBytes(limit) }) : t("up.failed", { reason: err.message });
  }
}

export async function uploadFiles(files) {
  await Promise.all([...files].map((f) => uploadOne(f)));
  await refreshDocuments();
}

export function wireDocuments() {
  const drop = $("drop");
  for (const name of ["dragenter", "dragover"]) {
    drop.addEventListener(name, (e) => { e.preventDefault(); drop.classList.add("over"); });
  }
  for (const name of ["dragleave", "drop"]) drop.addEventListener(name, () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    if (e.dataTransfer && e.dataTransfer.files.length) uploadFiles(e.dataTransfer.files);
  });
  $("file-input").addEventListener("change", (e) => {
    uploadFiles(e.target.files);
    e.target.value = "";
  });
  $("search-form").addEventListener("submit", (e) => { e.preventDefault(); runSearch(); });
}

async function runSearch() {
  const q = $("search-q").value.trim();
  if (!q) return;
  const k = $("search-k").value || "5";
  await Promise.all(["lexical", "dense", "hybrid"].map(async (mode) => {
    const list = $(`hits-${mode}`);
    list.replaceChildren();
    let hits;
    try {
      hits = await api(`v1/kb/search?${new URLSearchParams({ q, top_k: k, mode })}`);
    } catch (err) {
      list.append(el("li", "field-error", err.message));
      return;
    }
    if (!hits.length) list.append(el("li", "hint", t("search.none")));
    for (const h of hits) {
      const item = el("li", "hit");
      const head = el("div", "hit-head");
      head.append(el("span", "hit-title", h.title || h.source.split("/").pop()), el("span", "score", `${t("search.score")} ${h.score.toFixed(4)}`));
      item.append(head, el("p", "hit-text", h.text.length > 400 ? `${h.text.slice(0, 400)}…` : h.text));
      list.append(item);
    }
  }));
}

export async function showDocument(id, chunkId) {
  $("doc-title").textContent = "";
  $("doc-meta").textContent = "";
  const box = $("doc-chunks");
  box.replaceChildren();
  let doc;
  try {
    doc = await api(`v1/documents/${encodeURIComponent(id)}`);
  } catch (err) {
    box.append(el("p", "field-error", err.status === 404 ? t("cite.missing") : err.message));
    return;
  }
  $("doc-title").textContent = doc.title || doc.source;
  $("doc-meta").textContent = t("doc.meta", { source: doc.source, chunks: doc.chunks.length, updated: formatTime(doc.updated) });
  let target = null;
  for (const c of doc.chunks) {
    const p = el("p", "chunk", c.text);
    p.dataset.chunk = c.chunk_id;
    if (c.page != null) p.title = t("cite.page", { page: c.page });
    if (c.chunk_id === chunkId) { p.classList.add("cited"); target = p; }
    box.append(p);
  }
  if (target) target.scrollIntoView({ block: "center" });
}

const isOffset = (n) => Number.isInteger(n) && n >= 0;

/**
 * Where citation `c` is in its page's `text`: the passage (chunk_start..chunk_end) and the quote
 * in it (start..end), as {passage, from, to} with from/to relative to the passage; null when the
 * offsets are missing or no longer fit the text (the document changed since the answer).
 */
export function citedRange(text, c) {
  const fits = (a, b) => isOffset(a) && isOffset(b) && a <= b && b <= text.length;
  const span = fits(c.start, c.end) ? [c.start, c.end] : null;
  const chunk = fits(c.chunk_start, c.chunk_end) ? [c.chunk_start, c.chunk_end] : span;
  if (!chunk) return null;
  const passage = text.slice(chunk[0], chunk[1]);
  const quote = c.quote || "";
  if (span && chunk[0] <= span[0] && span[1] <= chunk[1] && (!quote || text.slice(span[0], span[1]) === quote)) {
    return { passage, from: span[0] - chunk[0], to: span[1] - chunk[0] };
  }
  // A quote that is not exactly its span (a search result quotes its passage's opening, trimmed).
  const q = quote.trim();
  const at = q ? passage.indexOf(q) : -1;
  return at < 0 ? null : { passage, from: at, to: at + q.length };
}

let citationShown = 0; // which showCitation call the dialog belongs to: a slower earlier one must not overwrite it
let pageImageUrl = null;

function resetPageImage() {
  $("cite-page").hidden = true;
  $("cite-page").open = false;
  $("cite-page").ontoggle = null;
  $("cite-image").removeAttribute("src");
  $("cite-anchor").hidden = true;
  $("cite-image-state").textContent = "";
  if (pageImageUrl) URL.revokeObjectURL(pageImageUrl);
  pageImageUrl = null;
}

/**
 * Offer the rendered page, the quote's span highlighted by the server; fetched when first opened,
 * beside the span's boxes, so that the dialog scrolls to the highlight however far down it is.
 */
function offerPageImage(c, page, shown) {
  const box = $("cite-page");
  const image = $("cite-image");
  const anchor = $("cite-anchor");
  const state = $("cite-image-state");
  const spanned = isOffset(c.start) && isOffset(c.end);
  const span = new URLSearchParams(spanned ? { start: c.start, end: c.end } : {});
  const base = `v1/documents/${encodeURIComponent(c.document_id)}/pages/${page}`;
  image.alt = t("cite.pageImageAlt", { page });
  box.hidden = false;
  box.ontoggle = async () => {
    if (!box.open || image.getAttribute("src") || shown !== citationShown) return;
    state.textContent = t("cite.pageLoading");
    try {
      const [blob, where] = await Promise.all([
        apiBlob(`${base}/image?${span}`),
        spanned ? api(`${base}?${span}`).catch(() => null) : null,
      ]);
      if (shown !== citationShown) return;
      pageImageUrl = URL.createObjectURL(blob);
      image.src = pageImageUrl;
      state.textContent = "";
      const first = where && where.boxes && where.boxes[0];
      if (!first) return;
      await image.decode().catch(() => {});
      if (shown !== citationShown) return;
      anchor.style.left = `${100 * first.x0}%`;
      anchor.style.top = `${100 * first.top}%`;
      anchor.style.height = `${100 * (first.bottom - first.top)}%`;
      anchor.hidden = false;
      anchor.scrollIntoView({ block: "center" });
    } catch (err) {
      if (shown === citationShown) state.textContent = t("cite.pageFailed", { reason: err.message });
    }
  };
}

/**
 * The citation dialog: the passage the answer rests on, the quoted sentence marked inside it, and
 * for a document with page images the page itself with the quote highlighted. The passage comes
 * from the page's text (GET v1/documents/{id}/pages/{page}); without offsets, or when that fails,
 * the quote is shown alone. Document text only ever goes in as text nodes.
 */
export async function showCitation(c) {
  const shown = ++citationShown;
  const dialog = $("cite-dialog");
  $("cite-title").textContent = c.title || c.source || c.document_id || "";
  const meta = [c.source, c.page != null ? t("cite.page", { page: c.page }) : ""].filter(Boolean).join(" · ");
  $("cite-meta").textContent = meta;
  const passage = $("cite-passage");
  passage.replaceChildren(el("mark", "quote", c.quote || ""));
  passage.dataset.shows = "quote"; // until the passage arrives, if it does
  const note = $("cite-note");
  note.hidden = true;
  resetPageImage();
  const link = $("cite-doc");
  link.hidden = !c.document_id;
  link.href = c.document_id ? `#/documents/${encodeURIComponent(c.document_id)}/${encodeURIComponent(c.chunk_id || "")}` : "#/documents";
  link.onclick = () => dialog.close();
  if (!dialog.open) dialog.showModal();
  if (!c.document_id) return;
  const page = Number.isInteger(c.page) && c.page > 0 ? c.page : 1;
  let body;
  try {
    body = await api(`v1/documents/${encodeURIComponent(c.document_id)}/pages/${page}`);
  } catch (err) {
    if (shown !== citationShown) return;
    note.textContent = err.status === 404 ? t("cite.missing") : t("cite.quoteOnly");
    note.hidden = false;
    return;
  }
  if (shown !== citationShown) return;
  if (!c.title && body.title) $("cite-title").textContent = body.title;
  const range = citedRange(body.text || "", c);
  if (range) {
    const mark = markRange(passage, range.passage, range.from, range.to);
    passage.dataset.shows = "passage";
    mark.scrollIntoView({ block: "nearest" });
  } else {
    note.textContent = t("cite.quoteOnly");
    note.hidden = false;
  }
  if (body.image) offerPageImage(c, page, shown);
}
