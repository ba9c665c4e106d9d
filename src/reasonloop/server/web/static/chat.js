// Conversations and runs: the list, a conversation's turns (each replayed from its run's stored
// events), asking, stopping, regenerating, copying and feedback. A run in flight survives a reload:
// its id is kept for the tab, and its events are read again from the first.

import { api, ApiError, followRun } from "./api.js";
import { el } from "./render.js";
import { t, translate } from "./i18n.js";
import { RunView } from "./runview.js";

const ACTIVE = "rl.activeRun";
const CURRENT = "rl.conversation";
const $ = (id) => document.getElementById(id);

export class Chat {
  constructor({ strategy, settings, onCite }) {
    this.strategy = strategy; // () => {reasoning?, mode?, agent?, model?}
    this.settings = settings; // SettingsForm
    this.onCite = onCite;
    this.conversations = [];
    this.current = null;
    this.active = null; // {runId, view, abort}
    this.openToken = 0;
    $("composer").addEventListener("submit", (e) => { e.preventDefault(); this.send(); });
    $("question").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); this.send(); }
    });
    $("stop").addEventListener("click", () => this.stop());
    document.addEventListener("keydown", (e) => { if (e.key === "Escape" && this.active) this.stop(); });
    $("new-conv").addEventListener("click", () => this.newConversation());
  }

  async start(listed) {
    await this.loadConversations(listed);
    const saved = JSON.parse(sessionStorage.getItem(ACTIVE) || "null");
    const last = sessionStorage.getItem(CURRENT);
    if (saved && saved.conversation_id) await this.open(saved.conversation_id);
    else if (last && this.conversations.some((c) => c.conversation_id === last)) await this.open(last);
  }

  setCurrent(id) {
    this.current = id;
    if (id) sessionStorage.setItem(CURRENT, id);
    else sessionStorage.removeItem(CURRENT);
  }

  async loadConversations(listed) {
    this.conversations = await (listed || api("v1/conversations"));
    this.renderList();
  }

  renderList() {
    if (this.editing) return; // a list loaded while a title is edited is drawn when the edit ends
    const list = $("conv-list");
    list.replaceChildren();
    for (const c of this.conversations) {
      const item = el("li", "conv");
      item.dataset.id = c.conversation_id;
      if (c.conversation_id === this.current) item.classList.add("current");
      const title = el("button", "conv-title link", c.title || t("conv.untitled"));
      title.type = "button";
      title.addEventListener("click", () => this.open(c.conversation_id));
      const rename = el("button", "link conv-rename", "✎");
      rename.type = "button";
      rename.title = t("conv.rename");
      rename.addEventListener("click", () => this.rename(c, item));
      const del = el("button", "link conv-delete", "✕");
      del.type = "button";
      del.title = t("conv.delete");
      del.addEventListener("click", () => this.remove(c));
      item.append(title, rename, del);
      list.append(item);
    }
  }

  rename(conv, item) {
    const input = el("input", "conv-edit");
    input.value = conv.title || "";
    input.setAttribute("aria-label", t("conv.renamePrompt"));
    item.replaceChildren(input);
    this.editing = true;
    input.focus();
    input.select();
    let done = false;
    const commit = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      try {
        if (save && title && title !== conv.title) {
          const updated = await api(`v1/conversations/${encodeURIComponent(conv.conversation_id)}`, { method: "PATCH", body: { title } });
          // the list may have been loaded again meanwhile: update the entry it holds now
          for (const c of this.conversations) if (c.conversation_id === conv.conversation_id) c.title = updated.title;
        }
      } finally {
        this.editing = false;
        this.renderList();
      }
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); commit(true); }
      if (e.key === "Escape") { e.stopPropagation(); commit(false); }
    });
    input.addEventListener("blur", () => commit(true));
  }

  async remove(conv) {
    if (!window.confirm(t("conv.confirmDelete"))) return;
    await api(`v1/conversations/${encodeURIComponent(conv.conversation_id)}`, { method: "DELETE" });
    if (this.current === conv.conversation_id) this.newConversation();
    await this.loadConversations();
  }

  newConversation() {
    this.detach();
    this.setCurrent(null);
    $("turns").replaceChildren();
    this.renderList();
    $("question").focus();
  }

  /** Stop following the run on screen (it goes on on the server). */
  detach() {
    if (this.active) this.active.abort.abort();
    this.active = null;
    this.busy(false);
  }

  async open(conversationId) {
    this.detach();
    const token = ++this.openToken;
    this.setCurrent(conversationId);
    this.renderList();
    const turns = $("turns");
    turns.replaceChildren();
    let conv;
    try {
      conv = await api(`v1/conversations/${encodeURIComponent(conversationId)}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) { sessionStorage.removeItem(ACTIVE); this.setCurrent(null); this.renderList(); return; }
      throw err;
    }
    if (token !== this.openToken) return;
    const replays = [];
    const messages = conv.messages || [];
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i];
      if (m.role !== "user") continue;
      const reply = messages[i + 1] && messages[i + 1].role === "assistant" ? messages[i + 1] : null;
      const view = this.addTurn(m.content);
      view.traceBox.open = false;
      if (reply && reply.run_id) replays.push(this.replay(view, reply.run_id, reply.content));
      else if (reply) view.handle({ type: "answer", text: reply.content, usage: {}, stop_reason: "final", final: true });
    }
    await Promise.all(replays);
    const saved = JSON.parse(sessionStorage.getItem(ACTIVE) || "null");
    if (token === this.openToken && saved && saved.conversation_id === conversationId && !messages.some((m) => m.run_id === saved.run_id)) {
      const view = this.addTurn(saved.question);
      view.traceBox.open = true;
      this.follow(saved.run_id, view);
    }
    turns.scrollTop = turns.scrollHeight;
  }

  async replay(view, runId, fallback) {
    try {
      await followRun(runId, { onEvent: (e, at) => view.handle(e, at), signal: AbortSignal.timeout(20000) });
    } catch {
      /* the run's events are gone (retention): its text from the conversation is what is left */
    }
    if (!view.ended) view.handle({ type: "answer", text: fallback || view.text, usage: {}, stop_reason: "final", final: true });
  }

  addTurn(question) {
    const node = $("turn-template").content.firstElementChild.cloneNode(true);
    translate(node);
    node.querySelector(".q").textContent = question;
    $("turns").append(node);
    const view = new RunView(node, { onCite: this.onCite });
    view.question = question;
    this.wireActions(view);
    return view;
  }

  wireActions(view) {
    const node = view.turn;
    node.querySelector(".copy").addEventListener("click", async (e) => {
      try { await navigator.clipboard.writeText(view.text); } catch { /* clipboard refused: nothing to copy into */ }
      e.target.textContent = t("turn.copied");
      setTimeout(() => { e.target.textContent = t("turn.copy"); }, 1500);
    });
    node.querySelector(".regen").addEventListener("click", () => this.send(view.question));
    const reason = node.querySelector(".fb-reason");
    node.querySelector(".up").addEventListener("click", () => this.feedback(view, 1, ""));
    node.querySelector(".down").addEventListener("click", () => { reason.hidden = false; reason.querySelector("input").focus(); });
    reason.addEventListener("submit", (e) => {
      e.preventDefault();
      reason.hidden = true;
      this.feedback(view, -1, reason.querySelector("input").value.trim());
    });
  }

  async feedback(view, rating, comment) {
    if (!view.runId) return;
    await api("v1/feedback", { method: "POST", body: { run_id: view.runId, rating, comment } });
    view.turn.querySelector(".fb-done").textContent = t("turn.thanks");
    view.turn.dataset.feedback = String(rating);
  }

  busy(on) {
    $("send").hidden = on;
    $("stop").hidden = !on;
  }

  showComposerError(message) {
    const box = $("composer-error");
    box.textContent = message;
    box.hidden = !message;
  }

  async send(again) {
    const question = again ?? $("question").value;
    if (!question.trim() || this.active) return;
    this.showComposerError("");
    if (!this.settings.validate()) { this.showComposerError(t("settings.invalid")); return; }
    const picked = this.strategy();
    // A mode sets its strategy's settings itself: the form belongs to the strategy selector.
    const body = { question, ...picked, settings: picked.mode ? {} : this.settings.values() };
    if (this.current) body.conversation_id = this.current;
    let record;
    try {
      record = await api("v1/runs", { method: "POST", body });
    } catch (err) {
      if (err instanceof ApiError && err.field && err.field.startsWith("settings.") && this.settings.showError(err.field.slice(9), err.message)) {
        this.showComposerError(t("settings.invalid"));
      } else {
        this.showComposerError(err instanceof ApiError ? `${err.code}: ${err.message}` : t("net.down"));
      }
      return;
    }
    if (again === undefined) $("question").value = "";
    const isNew = this.current !== record.conversation_id;
    this.setCurrent(record.conversation_id);
    sessionStorage.setItem(ACTIVE, JSON.stringify({ run_id: record.run_id, conversation_id: record.conversation_id, question }));
    const view = this.addTurn(question);
    view.traceBox.open = true;
    view.runId = record.run_id;
    if (isNew) this.loadConversations().catch(() => {}); // refreshed again after the run
    this.follow(record.run_id, view);
  }

  async follow(runId, view) {
    const abort = new AbortController();
    this.active = { runId, view, abort };
    view.runId = runId;
    this.busy(true);
    const turns = $("turns");
    try {
      await followRun(runId, {
        signal: abort.signal,
        onEvent: (e, at) => {
          const stick = turns.scrollHeight - turns.scrollTop - turns.clientHeight < 40;
          view.handle(e, at);
          if (stick) turns.scrollTop = turns.scrollHeight;
        },
      });
    } catch (err) {
      view.handle({ type: "error", code: err.code || "net.error", message: err.message || String(err), final: true });
    }
    if (this.active && this.active.runId === runId) {
      this.active = null;
      this.busy(false);
      sessionStorage.removeItem(ACTIVE);
      // a run the server ended as it stopped: the list is refreshed again when the server is back
      this.loadConversations().catch(() => {});
    }
  }

  async stop() {
    if (!this.active) return;
    try {
      await api(`v1/runs/${encodeURIComponent(this.active.runId)}/stop`, { method: "POST" });
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 409)) throw err; // 409: it had ended already
    }
  }

  relabel() {
    this.renderList();
    for (const node of document.querySelectorAll("#turns .turn")) translate(node);
    for (const node of document.querySelectorAll("#turns .turn .trace-label")) node.textContent = t("trace.label");
  }
}
