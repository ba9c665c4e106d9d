// A research run drawn as a tree: its rounds, each round's research questions with their sub-agent's
// live state (waiting, running with its budget, done with its findings and citations, failed,
// cancelled), the sub-agent's own steps nested under its question, the judge's decision after each
// round, and the report's summary. Everything comes from the typed events (plan, research_task,
// judged, report): no text is parsed here, and all of it goes in as textContent.

import { el } from "./render.js";
import { t } from "./i18n.js";

function count(key, n) {
  return n === 1 ? t(key) : t(`${key}s`, { n });
}

export function isResearchPlan(event) {
  const steps = event.steps || [];
  return steps.length > 0 && steps.every((s) => s.tool === "research");
}

export class ResearchTree {
  /** `view` is the RunView: the tree is one item of its trace, each question a call its sub-agent's events nest under. */
  constructor(view, event) {
    this.view = view;
    this.tasks = new Map();
    this.rounds = new Map();
    this.root = el("li", "research");
    this.root.append(el("span", "t-kind", t("research.title")));
    this.list = el("ol", "research-rounds");
    this.root.append(this.list);
    view.add(event, this.root);
  }

  round(n) {
    let round = this.rounds.get(n);
    if (!round) {
      round = el("li", "research-round");
      round.dataset.round = String(n);
      round.append(el("div", "round-head", t("research.round", { n })), el("ol", "research-tasks"));
      this.list.append(round);
      this.rounds.set(n, round);
    }
    return round;
  }

  task(step, question, round) {
    let node = this.tasks.get(step);
    if (!node) {
      node = el("li", "call research-task");
      node.dataset.step = step;
      node.dataset.status = "waiting";
      const head = el("div", "call-head");
      head.append(el("span", "step-id", step), el("span", "question", question), el("span", "badge", t("trace.waiting")), el("span", "budget"));
      node.append(head, el("div", "call-body"), el("ol", "children"));
      this.round(round).querySelector(".research-tasks").append(node);
      this.tasks.set(step, node);
      this.view.calls.set(`0:research_${step}`, node);
    }
    return node;
  }

  plan(event) {
    for (const step of event.steps || []) this.task(step.id, step.input, event.attempt || 1);
  }

  update(event) {
    const node = this.task(event.step, event.question, event.round || 1);
    node.dataset.status = event.status;
    node.querySelector(".badge").textContent = t(`research.${event.status}`);
    if (event.status === "running") {
      const parts = [];
      if (event.budget_tokens != null) parts.push(t("research.tokens", { n: event.budget_tokens }));
      parts.push(t("research.tools", { n: event.budget_tool_calls }));
      node.querySelector(".budget").textContent = parts.join(" · ");
    }
    const body = node.querySelector(".call-body");
    if (event.status === "done") {
      const findings = el("div", "findings", event.findings);
      const cited = (event.citations || []).map((c) => `[${c.marker}] ${c.title || c.source}`).join(" · ");
      body.replaceChildren(findings);
      if (cited) body.append(el("div", "finding-sources", cited));
    } else if (event.note) {
      body.replaceChildren(el("div", "note", event.note));
    }
  }

  judged(event) {
    const round = this.round(event.round);
    const node = el("div", "research-judge");
    node.dataset.outcome = event.outcome;
    node.append(el("span", "t-kind", t("research.judge")), el("span", "outcome", t(`judge.${event.outcome}`)));
    const said = event.reason || event.contradiction;
    if (said) node.append(el("span", "reason", said));
    if ((event.gaps || []).length) {
      const gaps = el("ul", "gaps");
      for (const gap of event.gaps) gaps.append(el("li", null, gap));
      node.append(gaps);
    }
    if (event.fallback) node.append(el("div", "fallback", event.fallback));
    round.querySelector(".research-judge")?.remove();
    round.append(node);
  }

  report(event) {
    if (event.partial) return;
    const node = el("div", "research-report");
    node.append(el("span", "t-kind", t("research.report")),
      el("span", "summary", `${count("research.section", (event.sections || []).length)} · ${count("research.citation", (event.citations || []).length)}`));
    if ((event.unestablished || []).length) {
      node.append(el("div", "io-label", t("research.unestablished")));
      const list = el("ul", "unestablished");
      for (const item of event.unestablished) list.append(el("li", null, item));
      node.append(list);
    }
    this.root.querySelector(":scope > .research-report")?.remove();
    this.root.append(node);
  }
}
