// The knowledge base: drag-and-drop upload with a progress bar per file (bytes sent, then chunks
// embedded), the document list, statistics, a document's text, the citation view and the
// retrieval test (lexical, dense and hybrid hits side by side).

import { api, ApiError, uploadFile } from "./api.js";
import { el, formatBytes, formatTime, highlight } from "./render.js";
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

/** The cited passage: the chunk's text from the document, the quoted span marked. */
export async function showCitation(c) {
  const dialog = $("cite-dialog");
  $("cite-title").textContent = c.title || c.source || c.document_id || "";
  const meta = [c.source, c.page != null ? t("cite.page", { page: c.page }) : ""].filter(Boolean).join(" · ");
  $("cite-meta").textContent = meta;
  const passage = $("cite-passage");
  highlight(passage, c.quote || "", c.quote || "");
  const link = $("cite-doc");
  link.href = c.document_id ? `#/documents/${encodeURIComponent(c.document_id)}/${encodeURIComponent(c.chunk_id || "")}` : "#/documents";
  link.onclick = () => dialog.close();
  if (!dialog.open) dialog.showModal();
  if (!c.document_id) return;
  try {
    const doc = await api(`v1/documents/${encodeURIComponent(c.document_id)}`);
    const chunk = doc.chunks.find((x) => x.chunk_id === c.chunk_id);
    if (chunk) highlight(passage, chunk.text, c.quote);
    if (!c.title && doc.title) $("cite-title").textContent = doc.title;
  } catch (err) {
    if (err.status === 404) passage.append(el("p", "hint", t("cite.missing")));
  }
}
