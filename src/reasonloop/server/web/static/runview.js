// One answer as its run's events arrive: the trace (progress, thoughts, tool calls with their status
// and observation, sub-agent events under the call that started them, a plan's steps filled in by the
// calls and searches that name them, searches), the streamed answer, citations, the usage line.
// Everything is drawn from the events' fields: no strategy's text is parsed here.

import { approvalCard, decided } from "./approval.js";
import { el, renderMarkdown } from "./render.js";
import { t } from "./i18n.js";
import { ResearchTree, isResearchPlan } from "./research.js";

export const perf = { delays: [], enabled: false };
/** The page's measurement hook: each answer text's delay from its event's arrival to the frame that shows it. */
window.reasonloopPerf = perf;

function statusOf(result) {
  if (!result.error) return "done";
  return result.error.code === "tool.timeout" || /timeout/i.test(result.error.type || "") ? "timed_out" : "failed";
}

function pretty(value) {
  if (value && typeof value === "object" && Object.keys(value).length === 1 && typeof value.input === "string") return value.input;
  try { return JSON.stringify(value, null, 2); } catch { return String(value); }
}

/** The key of plan step `step` of the run (or sub-run) that `event` belongs to. */
function stepKey(event, step) {
  return `${event.depth || 0}:${event.parent_call_id || ""}:${step}`;
}

/** Put `fresh`'s nodes in `box`, keeping the leading ones that did not change: while an answer
 * streams, only its last block is laid out again, not the whole answer each frame. */
function patch(box, fresh) {
  const next = [...fresh.childNodes];
  let i = 0;
  while (i < next.length && i < box.childNodes.length && box.childNodes[i].isEqualNode(next[i])) i += 1;
  while (box.childNodes.length > i) box.lastChild.remove();
  box.append(...next.slice(i));
}

export class RunView {
  constructor(turn, { onCite } = {}) {
    this.turn = turn;
    this.onCite = onCite;
    this.traceBox = turn.querySelector(".trace");
    this.traceList = turn.querySelector(".trace-list");
    this.answerBox = turn.querySelector(".answer");
    this.errorBox = turn.querySelector(".run-error");
    this.sourcesBox = turn.querySelector(".sources");
    this.usageBox = turn.querySelector(".usage");
    this.text = "";
    this.citations = [];
    this.calls = new Map();
    this.plan = new Map();
    this.research = null;
    this.subAnswers = new Map();
    this.steps = 0;
    this.started = null;
    this.ended = false;
    this.lastSeq = 0;
    this.pending = [];
    this.frame = 0;
    this.runId = null;
    this.stopReason = null;
    this.updateLabel();
    this.answerBox.addEventListener("click", (e) => this.citeClick(e));
    this.sourcesBox.addEventListener("click", (e) => this.citeClick(e));
  }

  citeClick(e) {
    const button = e.target.closest("button.cite");
    if (!button || !this.onCite) return;
    const citation = this.citations.find((c) => String(c.marker) === button.dataset.marker);
    if (citation) this.onCite(citation);
  }

  updateLabel() {
    this.turn.querySelector(".trace-label").textContent = t("trace.label");
    this.turn.querySelector(".trace-count").textContent = this.steps ? `· ${this.steps === 1 ? t("trace.step") : t("trace.steps", { n: this.steps })}` : "";
  }

  /** The list an event goes in: the trace, or the children of the tool call that started its sub-agent. */
  container(event) {
    if (event.depth > 0 && event.parent_call_id) {
      const parent = this.calls.get(`${event.depth - 1}:${event.parent_call_id}`);
      if (parent) return parent.querySelector(":scope > .children");
    }
    return this.traceList;
  }

  handle(event, arrived = performance.now()) {
    if (event.seq && event.seq <= this.lastSeq) return; // never twice (a resumed stream starts after the last seq)
    if (event.seq) this.lastSeq = event.seq;
    if (!this.runId && event.run_id && !(event.depth > 0)) this.runId = event.run_id;
    const nested = event.depth > 0;
    switch (event.type) {
      case "run_started":
        if (!nested) this.started = event.ts;
        if (!nested && event.ran) this.add(event, el("li", "t-progress", event.ran)); // what actually ran
        break;
      case "progress":
        this.add(event, el("li", "t-progress", event.message));
        break;
      case "thought":
        if (!event.plan_text) this.thought(event); // a plan's text: its plan event draws it
        break;
      case "plan":
        if (!nested && (this.research || isResearchPlan(event))) this.researchTree(event).plan(event);
        else this.planned(event);
        break;
      case "research_task":
        this.researchTree(event).update(event);
        break;
      case "judged":
        this.researchTree(event).judged(event);
        break;
      case "report":
        this.researchTree(event).report(event);
        break;
      case "tool_call":
        this.toolCall(event);
        break;
      case "tool_result":
        this.toolResult(event);
        break;
      case "searched":
        this.searched(event);
        break;
      case "approval_requested":
        this.approvalRequested(event);
        break;
      case "approval_decided":
        this.approvalDecided(event);
        break;
      case "route":
        this.routed(event);
        break;
      case "resumed":
        // The server that ran it died and another goes on: the answer starts over (its deltas come again).
        this.text = "";
        this.add(event, el("li", "t-progress", t("trace.resumed")));
        this.schedule(arrived);
        break;
      case "answer_delta":
        if (nested) this.subAnswer(event).textContent += event.text;
        else { this.text += event.text; this.schedule(arrived); }
        break;
      case "answer":
        if (nested) { this.subAnswer(event).textContent = event.text; break; }
        this.text = event.text;
        this.citations = event.citations || [];
        if (event.final) this.finish(event);
        this.schedule(arrived);
        break;
      case "error":
        if (nested) { this.add(event, el("li", "t-error", `${event.code}: ${event.message}`)); break; }
        this.errorBox.hidden = false;
        this.errorBox.replaceChildren(el("strong", null, `${t("run.failed")} — ${event.code}`), el("span", null, `: ${event.message}`));
        if (event.final) this.finish(event, "error");
        this.schedule(arrived);
        break;
      default:
        break;
    }
  }

  /** The research tree of a research run (drawn at its first research plan). */
  researchTree(event) {
    if (!this.research) this.research = new ResearchTree(this, event);
    return this.research;
  }

  add(event, node) {
    this.container(event).append(node);
    this.steps += 1;
    this.updateLabel();
    return node;
  }

  /** The auto mode's route: which way, the strategy that answers, who decided and why. */
  routed(event) {
    const item = el("li", "t-route");
    item.dataset.route = event.route;
    const parts = [t(`route.${event.route}`)];
    if (event.strategy) parts.push(`→ ${event.strategy}`);
    if (event.wanted) parts.push(`(${t("route.wanted", { route: t(`route.${event.wanted}`) })})`);
    item.append(
      el("span", "t-kind", t("trace.route")),
      el("span", "route-name", parts.join(" ")),
      el("span", "route-why", `${t(`route.by.${event.decided_by}`)}: ${event.reason}`),
    );
    this.add(event, item);
  }

  thought(event) {
    const item = el("li", "t-thought");
    item.append(el("span", "t-kind", t("trace.thought")), el("span", "t-text", event.text));
    this.add(event, item);
  }

  /** A plan's steps, each waiting until the call or search that names it arrives. */
  planned(event) {
    const item = el("li", "t-plan");
    item.append(el("span", "t-kind", t("trace.plan")));
    const list = el("ol", "plan-steps");
    for (const planned of event.steps || []) {
      const step = el("li", "call step");
      step.dataset.step = planned.id;
      step.dataset.status = "waiting";
      step.dataset.dependsOn = (planned.depends_on || []).join(" ");
      const head = el("div", "call-head");
      head.append(el("span", "step-id", `#${planned.id}`), el("span", "tool", planned.tool), el("span", "planned", planned.input), el("span", "badge", t("trace.waiting")));
      step.append(head, el("div", "call-body"), el("ol", "children"));
      list.append(step);
      this.plan.set(stepKey(event, planned.id), step);
    }
    item.append(list);
    this.add(event, item);
  }

  /** A new call item in the trace: its tool's name and a status badge. */
  callItem(event, tool) {
    const item = el("li", "call");
    const head = el("div", "call-head");
    head.append(el("span", "tool", tool), el("span", "badge"));
    item.append(head, el("div", "call-body"), el("ol", "children"));
    this.add(event, item);
    return item;
  }

  toolCall(event) {
    let item = event.step ? this.plan.get(stepKey(event, event.step)) : null;
    if (!item) item = this.callItem(event, event.tool);
    item.dataset.callId = event.call_id;
    item.dataset.status = "running";
    item.querySelector(".badge").textContent = t("trace.running");
    const body = item.querySelector(".call-body");
    body.replaceChildren(el("div", "io-label", t("trace.input")), el("pre", "io", pretty(event.input)));
    this.calls.set(`${event.depth || 0}:${event.call_id}`, item);
  }

  toolResult(event) {
    const item = this.calls.get(`${event.depth || 0}:${event.call_id}`);
    if (!item) return;
    const status = statusOf(event);
    item.dataset.status = status;
    item.querySelector(".badge").textContent = t(`trace.${status}`);
    const body = item.querySelector(".call-body");
    const text = event.error ? `${event.error.code || event.error.type}: ${event.error.error}` : event.output;
    const details = el("details", "observation");
    details.append(el("summary", null, t("trace.observation")), el("pre", "io", text));
    if (status !== "done") details.open = true;
    body.append(details);
  }

  /** A call waiting for approval: its item says so, with the card that answers it. */
  approvalRequested(event) {
    const item = this.calls.get(`${event.depth || 0}:${event.call_id}`) || this.callItem(event, event.tool);
    item.dataset.status = "awaiting";
    item.querySelector(".badge").textContent = t("trace.awaiting");
    const old = item.querySelector(`:scope > .call-body > .approval[data-approval-id="${CSS.escape(event.approval_id)}"]`);
    if (old) return; // asked again after the run resumed elsewhere: the card is there
    item.querySelector(".call-body").append(approvalCard(event, this.runId || event.run_id));
  }

  approvalDecided(event) {
    const item = this.calls.get(`${event.depth || 0}:${event.call_id}`);
    if (!item) return;
    const card = item.querySelector(`.approval[data-approval-id="${CSS.escape(event.approval_id)}"]`);
    if (card) decided(card, event);
    if (item.dataset.status === "awaiting") {
      item.dataset.status = "running";
      item.querySelector(".badge").textContent = t("trace.running");
    }
  }

  /** A search the strategy made itself: its plan step (a sub-question) or an item of its own, done. */
  searched(event) {
    const item = (event.step && this.plan.get(stepKey(event, event.step))) || this.callItem(event, t("trace.search"));
    item.dataset.status = "done";
    item.dataset.hits = String(event.hits);
    item.querySelector(".badge").textContent = t("trace.done");
    const request = { query: event.query, top_k: event.top_k };
    if (event.queries && event.queries.length) request.queries = event.queries;
    if (event.hypothetical && event.hypothetical.length) request.hyde = event.hypothetical[0];
    const details = el("details", "observation");
    details.append(el("summary", null, t("trace.observation")), el("pre", "io", event.evidence));
    item.querySelector(".call-body").replaceChildren(el("div", "io-label", t("trace.input")), el("pre", "io", pretty(request)), details);
  }

  subAnswer(event) {
    const key = `${event.depth}:${event.parent_call_id}`;
    let box = this.subAnswers.get(key);
    if (!box) {
      box = el("li", "t-subanswer");
      this.container(event).append(box);
      this.subAnswers.set(key, box);
    }
    return box;
  }

  finish(event, reason) {
    this.ended = true;
    this.stopReason = reason || event.stop_reason || "final";
    const usage = event.usage || {};
    const secs = this.started && event.ts ? Math.max(0, event.ts - this.started).toFixed(1) : "–";
    this.usageBox.textContent = t("usage.line", {
      calls: usage.llm_calls ?? 0,
      tokens: (usage.prompt_tokens ?? 0) + (usage.completion_tokens ?? 0),
      tools: usage.tool_calls ?? 0,
      searches: usage.searches ?? 0,
      secs,
      reason: t(`stop.${this.stopReason}`),
    });
    this.usageBox.dataset.stopReason = this.stopReason;
    if (this.stopReason !== "final") {
      this.traceList.append(el("li", `t-stop stop-${this.stopReason}`, t(`stop.${this.stopReason}`)));
    }
    const cut = this.stopReason === "stopped" || this.stopReason === "error";
    for (const card of this.traceList.querySelectorAll(".approval:not([data-decision])")) card.querySelector(".approval-buttons")?.remove();
    for (const item of this.traceList.querySelectorAll('.call[data-status="running"], .call[data-status="awaiting"], .step[data-status="waiting"]')) {
      if (cut) item.dataset.status = "failed";
      else if (item.dataset.status === "waiting") { // the run ended without carrying the step out
        item.dataset.status = "skipped";
        item.querySelector(".badge").textContent = t("trace.skipped");
      }
    }
    this.renderSources();
    this.turn.querySelector(".actions").hidden = false;
  }

  renderSources() {
    this.sourcesBox.replaceChildren();
    if (!this.citations.length) { this.sourcesBox.hidden = true; return; }
    this.sourcesBox.hidden = false;
    this.sourcesBox.append(el("li", "sources-head", t("turn.sources")));
    for (const c of this.citations) {
      const item = el("li", "source");
      const button = el("button", "cite", `[${c.marker}]`);
      button.type = "button";
      button.dataset.marker = String(c.marker);
      const page = c.page != null ? ` · ${t("cite.page", { page: c.page })}` : "";
      item.append(button, el("span", "source-title", ` ${c.title || c.source}${page}`));
      this.sourcesBox.append(item);
    }
  }

  /** Render the answer in the next frame: however many deltas arrived, one Markdown pass per frame. */
  schedule(arrived) {
    if (perf.enabled) this.pending.push(arrived);
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const markers = new Set(this.citations.map((c) => c.marker));
      patch(this.answerBox, renderMarkdown(this.text, markers));
      if (perf.enabled && this.pending.length) {
        const now = performance.now();
        for (const at of this.pending) perf.delays.push(now - at);
        this.pending = [];
      }
    });
  }
}
