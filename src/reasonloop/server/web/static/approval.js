// A tool call waiting for approval, drawn as a card in its call's item: why it asks, the arguments
// the model asked for in an editable box, a reason, Confirm and Reject. Confirm sends the arguments
// as edited (unchanged: a confirmation; changed: a modification, which the server checks against
// the tool's schema: a refusal is shown on the card, which stays). Everything shown is text
// (textContent, a textarea's value): arguments and reasons come from the model and other people.

import { api } from "./api.js";
import { el } from "./render.js";
import { t } from "./i18n.js";

function same(a, b) {
  const canonical = (value) => JSON.stringify(value, Object.keys(value || {}).sort());
  return canonical(a) === canonical(b);
}

/** The card for `event` (an approval_requested event of run `runId`). */
export function approvalCard(event, runId) {
  const card = el("div", "approval");
  card.dataset.approvalId = event.approval_id;
  const title = el("div", "approval-title", t("approval.title"));
  const why = el("div", "approval-why", event.reason || "");
  const label = el("label", "io-label", t("approval.arguments"));
  const box = document.createElement("textarea");
  box.className = "approval-arguments";
  box.spellcheck = false;
  box.value = JSON.stringify(event.arguments || {}, null, 2);
  box.rows = Math.min(12, box.value.split("\n").length + 1);
  label.append(box);
  const reason = document.createElement("input");
  reason.className = "approval-reason";
  reason.type = "text";
  reason.maxLength = 4000;
  reason.placeholder = t("approval.reason");
  const problem = el("div", "approval-problem");
  problem.hidden = true;
  const confirm = el("button", "approval-confirm primary", t("approval.confirm"));
  const reject = el("button", "approval-reject", t("approval.reject"));
  confirm.type = reject.type = "button";
  const buttons = el("div", "approval-buttons");
  buttons.append(confirm, reject);
  card.append(title, why, label, reason, buttons, problem);
  if (event.expires_at) card.append(el("div", "approval-expires", t("approval.expires", { at: new Date(event.expires_at * 1000).toLocaleTimeString() })));

  const say = (text) => { problem.hidden = !text; problem.textContent = text || ""; };
  async function send(body) {
    confirm.disabled = reject.disabled = true;
    say("");
    try {
      await api(`v1/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(event.approval_id)}`, { method: "POST", body });
      card.dataset.sent = "true";
      buttons.replaceChildren(el("span", "approval-sent", t("approval.sent")));
    } catch (err) {
      confirm.disabled = reject.disabled = false;
      say(err.message || String(err));
    }
  }
  confirm.addEventListener("click", () => {
    let edited;
    try {
      edited = JSON.parse(box.value);
    } catch (err) {
      say(t("approval.notJson", { problem: err.message }));
      return;
    }
    if (!edited || typeof edited !== "object" || Array.isArray(edited)) { say(t("approval.notObject")); return; }
    const body = same(edited, event.arguments || {}) ? { decision: "confirm" } : { decision: "modify", arguments: edited };
    if (reason.value.trim()) body.reason = reason.value.trim();
    send(body);
  });
  reject.addEventListener("click", () => send({ decision: "reject", reason: reason.value.trim() }));
  return card;
}

/** The card once decided: who decided what, and the arguments the tool ran with. */
export function decided(card, event) {
  const by = event.by || {};
  const who = [by.key, by.principal].filter(Boolean).join(" · ");
  let said = t(`approval.decided.${event.decision}`);
  if (who) said += ` ${t("approval.by", { who })}`;
  if (by.via) said += ` · ${t("approval.via", { via: by.via })}`;
  const line = el("div", `approval-decided decided-${event.decision}`, said);
  const parts = [el("div", "approval-title", t("approval.titleDecided")), line];
  if (event.reason) parts.push(el("div", "approval-why", event.reason));
  if (event.decision === "modify") parts.push(el("pre", "io", JSON.stringify(event.arguments_run, null, 2)));
  card.dataset.decision = event.decision;
  card.replaceChildren(...parts.filter(Boolean));
}
