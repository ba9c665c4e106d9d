// The page: views by URL hash, sign-in with an API key when the server asks for one, the model in
// use and the served ones a run may pick, the thinking-mode selector, the strategy selector and its
// settings form (set aside while a mode is chosen), the language switch, the connection banner.

import { api, ApiError, auth, isOffline, on } from "./api.js";
import { Chat } from "./chat.js";
import { refreshDocuments, showCitation, showDocument, wireDocuments } from "./documents.js";
import { language, localized, setLanguage, t, translate } from "./i18n.js";
import { el } from "./render.js";
import { SettingsForm } from "./settings.js";

const $ = (id) => document.getElementById(id);
const settings = new SettingsForm($("settings-form"));
let plugins = new Map(); // option value -> {kind, id, schema, view (the catalog's entry)}
let chat = null;
let started = false;
let llm = null; // GET /v1/llm: {in_use, offered, found}
let modes = []; // GET /v1/modes: {id, name, description, translations, strategy, available}

function chosen() {
  const model = $("model").value;
  const mode = $("mode").value;
  if (mode) return model ? { mode, model } : { mode };
  const value = $("strategy").value;
  const p = plugins.get(value);
  if (!p) return {};
  if (p.kind === "agent") return { agent: p.id };
  return model ? { reasoning: p.id, model } : { reasoning: p.id };
}

function renderModes() {
  const select = $("mode");
  const saved = select.value || localStorage.getItem("rl.mode") || "";
  select.replaceChildren(new Option(t("mode.none"), ""));
  for (const m of modes) {
    const name = localized(m, "name") || m.id;
    const option = new Option(m.available ? name : `${name} (${t("mode.unavailable")})`, m.id);
    option.disabled = !m.available;
    select.append(option);
  }
  select.value = modes.some((m) => m.id === saved && m.available) ? saved : "";
  describeMode();
}

function describeMode() {
  const value = $("mode").value;
  localStorage.setItem("rl.mode", value);
  const m = modes.find((x) => x.id === value);
  const runs = m && m.strategy !== m.id ? ` · ${t("mode.runs", { strategy: m.strategy })}` : "";
  $("mode-desc").textContent = m ? `${localized(m, "description")}${runs}` : t("mode.noneHint");
  // A mode decides the strategy and its settings: the strategy selector and its form step aside.
  $("strategy-box").hidden = $("strategy-desc").hidden = $("settings-box").hidden = Boolean(m);
}

async function loadModes() {
  modes = await api("v1/modes");
  renderModes();
}

function modelLabel(m) {
  return `${m.spec} (${t(`model.${m.kind}`)})`;
}

function modelDetails(m) {
  const parts = [m.base_url];
  if (m.tool_calls !== null) parts.push(t(m.tool_calls ? "model.tools" : "model.noTools"));
  if (m.context_length) parts.push(`${m.context_length} ${t("model.tokens")}`);
  return parts.join(" · ");
}

function renderModels() {
  const select = $("model");
  const saved = select.value || localStorage.getItem("rl.model") || "";
  select.replaceChildren();
  if (!llm) return;
  const inUse = llm.in_use.name || t("model.none");
  select.append(new Option(`${inUse} (${t("model.inUse")})`, ""));
  const offered = llm.offered ? llm.found.filter((m) => m.kind !== "embedding") : [];
  if (offered.length) {
    const group = el("optgroup");
    group.label = t("model.found");
    for (const m of offered) group.append(new Option(modelLabel(m), m.id));
    select.append(group);
  }
  select.value = offered.some((m) => m.id === saved) ? saved : "";
  describeModel();
}

function describeModel() {
  const value = $("model").value;
  localStorage.setItem("rl.model", value);
  const picked = llm?.found.find((m) => m.id === value);
  // The model auto found: its details and where to change it, shorter than the server's sentence.
  const found = llm?.in_use.chosen_by && llm.found.find((m) => m.spec === llm.in_use.name);
  let text = llm?.in_use.chosen_by || llm?.in_use.problem || "";
  if (picked) text = modelDetails(picked);
  else if (found) text = `${t("model.foundNote")} ${modelDetails(found)}`;
  $("model-desc").textContent = text;
}

async function loadModels() {
  llm = await api("v1/llm");
  renderModels();
}

function renderSettings() {
  const value = $("strategy").value;
  const p = plugins.get(value);
  localStorage.setItem("rl.strategy", value);
  $("strategy-desc").textContent = p ? localized(p.view, "description") : "";
  settings.render(p ? p.schema : null, `rl.settings.${value}`);
}

/** A strategy's option: its name in the interface's language, and its id. */
function strategyLabel(p) {
  const name = localized(p.view, "name");
  return p.kind === "agent" ? name || p.id : name && name !== p.id ? `${name} (${p.id})` : p.id;
}

function labelStrategies() {
  for (const option of $("strategy").querySelectorAll("option")) {
    const p = plugins.get(option.value);
    if (p) option.textContent = strategyLabel(p);
  }
  const group = $("strategy").querySelector("optgroup");
  if (group) group.label = t("strategy.agent");
}

async function loadStrategies() {
  const [reasoning, agents] = await Promise.all([api("v1/reasoning"), api("v1/agents")]);
  plugins = new Map();
  const select = $("strategy");
  select.replaceChildren();
  for (const r of reasoning) {
    if (r.error) continue;
    const value = `reasoning:${r.id}`;
    plugins.set(value, { kind: "reasoning", id: r.id, schema: r.settings_schema, view: r, isDefault: r.default });
    select.append(new Option("", value));
  }
  if (agents.length) {
    const group = el("optgroup");
    group.label = t("strategy.agent");
    for (const a of agents) {
      const value = `agent:${a.id}`;
      plugins.set(value, { kind: "agent", id: a.id, schema: a.settings_schema, view: a });
      group.append(new Option("", value));
    }
    select.append(group);
  }
  labelStrategies();
  const saved = localStorage.getItem("rl.strategy");
  // Until the user picks one: the server's default, the strategy every other surface uses.
  const fallback = [...plugins.keys()].find((value) => plugins.get(value).isDefault) || select.options[0]?.value;
  select.value = saved && plugins.has(saved) ? saved : fallback;
  renderSettings();
}

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const view = ["chat", "documents", "search"].includes(parts[0]) ? parts[0] : "chat";
  const showDoc = parts[0] === "documents" && parts[1];
  for (const section of document.querySelectorAll("main > .view")) section.hidden = true;
  $(showDoc ? "view-document" : `view-${view}`).hidden = false;
  for (const a of document.querySelectorAll(".tabs a")) a.classList.toggle("current", a.dataset.view === view);
  if (!started) return;
  if (showDoc) showDocument(parts[1], parts[2]).catch(report);
  else if (view === "documents") refreshDocuments().catch(report);
}

function report(err) {
  if (err instanceof ApiError && err.status === 401) return; // the sign-in dialog is up
  // A request the network refused says so in our words, not the browser's ("Failed to fetch").
  if (!(err instanceof ApiError) && isOffline()) { status(t("net.down"), "error"); return; }
  status(err.message || String(err), "error");
}

function status(text, kind) {
  const box = $("status");
  box.textContent = text;
  box.dataset.kind = kind || "";
  box.hidden = !text;
}

function askForKey(message) {
  const dialog = $("login-dialog");
  $("login-error").textContent = message || "";
  $("login-error").hidden = !message;
  if (!dialog.open) dialog.showModal();
  $("login-key").focus();
}

async function signIn(e) {
  e.preventDefault();
  auth.key = $("login-key").value.trim();
  try {
    await api("v1/conversations?limit=1");
  } catch (err) {
    auth.key = "";
    askForKey(err instanceof ApiError && err.status === 401 ? t("auth.wrong") : err.message);
    return;
  }
  $("login-key").value = "";
  $("login-dialog").close();
  await boot();
}

async function boot() {
  const conversations = api("v1/conversations"); // asked for beside the catalogs, not after them
  conversations.catch(() => {});
  try {
    await loadStrategies();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) { askForKey(auth.key ? t("auth.expired") : ""); return; }
    status(t("net.down"), "error");
    setTimeout(boot, 1500);
    return;
  }
  $("logout").hidden = !auth.key;
  await loadModes().catch(report);
  loadModels().catch(report); // a slow look around the machine never holds up the page
  if (!chat) chat = new Chat({ strategy: chosen, settings, onCite: (c) => showCitation(c).catch(report) });
  started = true;
  route();
  await chat.start(conversations).catch(report);
  performance.mark("reasonloop:usable"); // strategies, conversations and the composer are there
}

function init() {
  $("lang").value = language();
  translate();
  $("lang").addEventListener("change", (e) => setLanguage(e.target.value));
  window.addEventListener("rl:language", () => {
    labelStrategies();
    renderSettings();
    renderModels();
    renderModes();
    if (chat) chat.relabel();
    route();
  });
  $("strategy").addEventListener("change", renderSettings);
  $("mode").addEventListener("change", describeMode);
  $("model").addEventListener("change", describeModel);
  $("settings-reset").addEventListener("click", () => { settings.reset(); renderSettings(); });
  $("login-form").addEventListener("submit", signIn);
  $("login-dialog").addEventListener("cancel", (e) => e.preventDefault()); // nothing works without a key
  $("logout").addEventListener("click", () => { auth.key = ""; sessionStorage.clear(); location.reload(); });
  on("unauthorized", () => askForKey(auth.key ? t("auth.expired") : ""));
  on("offline", () => status(t("net.down"), "error"));
  on("online", () => {
    status(t("net.back"), "ok");
    setTimeout(() => { if ($("status").dataset.kind === "ok") status(""); }, 2000);
    if ($("composer-error").textContent === t("net.down")) chat?.showComposerError("");
    if (started && chat) chat.loadConversations().catch(report);
  });
  window.addEventListener("hashchange", route);
  wireDocuments();
  route();
  boot();
}

init();
