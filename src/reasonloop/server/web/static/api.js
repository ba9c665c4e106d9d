// The server's public HTTP API: JSON requests, the run event stream (SSE read with fetch, so that
// it can carry the API key and resume with Last-Event-ID), uploads with progress.

const KEY = "rl.apiKey";

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || `http.${status}`;
    this.field = error.field || null;
    this.body = body;
  }
}

export const auth = {
  get key() { return sessionStorage.getItem(KEY) || ""; },
  set key(value) { value ? sessionStorage.setItem(KEY, value) : sessionStorage.removeItem(KEY); },
};

const listeners = { unauthorized: [], offline: [], online: [] };
export function on(name, fn) { listeners[name].push(fn); }
function emit(name, ...args) { for (const fn of listeners[name]) fn(...args); }

let offline = false;
function wentOffline() {
  if (offline) return;
  offline = true;
  emit("offline");
  const probe = async () => {
    try {
      const r = await fetch("healthz", { cache: "no-store" });
      if (r.ok) { offline = false; emit("online"); return; }
    } catch { /* still down */ }
    setTimeout(probe, 1000);
  };
  setTimeout(probe, 500);
}
export function isOffline() { return offline; }

function headers(extra = {}) {
  const h = { ...extra };
  if (auth.key) h.Authorization = `Bearer ${auth.key}`;
  return h;
}

/** A JSON request; throws ApiError (with code, message and field) on an error answer. */
export async function api(path, { method = "GET", body, signal } = {}) {
  let response;
  try {
    response = await fetch(path, {
      method,
      signal,
      headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    if (err.name !== "AbortError") wentOffline();
    throw err;
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    if (response.status === 401) emit("unauthorized");
    throw new ApiError(response.status, data);
  }
  return data;
}

/** A binary resource (a page image) as a Blob, fetched with the API key; throws ApiError like api(). */
export async function apiBlob(path, { signal } = {}) {
  let response;
  try {
    response = await fetch(path, { signal, headers: headers() });
  } catch (err) {
    if (err.name !== "AbortError") wentOffline();
    throw err;
  }
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    if (response.status === 401) emit("unauthorized");
    throw new ApiError(response.status, data);
  }
  return response.blob();
}

/** SSE messages ({id, event, data}) from a streamed response body. */
async function* sseMessages(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let message = {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      let line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (message.data !== undefined) yield message;
        message = {};
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        message[field] = field === "data" && message.data !== undefined ? `${message.data}\n${value}` : value;
      }
    }
  }
}

/**
 * Follow a run's events from after seq `after`, calling onEvent(event, arrivedAt) for each; a lost
 * connection is retried with Last-Event-ID (no gap, no repeat) until the run's last event or abort.
 */
export async function followRun(runId, { after = 0, onEvent, signal, onReconnecting }) {
  let last = after;
  let delay = 250;
  for (;;) {
    let ended = false;
    try {
      const h = headers({ Accept: "text/event-stream" });
      if (last > 0) h["Last-Event-ID"] = String(last);
      const response = await fetch(`v1/runs/${encodeURIComponent(runId)}/events`, { headers: h, signal, cache: "no-store" });
      if (!response.ok) {
        const data = await response.json().catch(() => null);
        if (response.status === 401) emit("unauthorized");
        throw new ApiError(response.status, data);
      }
      delay = 250;
      for await (const message of sseMessages(response.body)) {
        const arrived = performance.now();
        const event = JSON.parse(message.data);
        if (message.id) last = Number(message.id);
        onEvent(event, arrived);
        if (event.final) ended = true; // the server says which event ends the run
      }
      if (ended) return last;
      // The stream closed without the run's end: the run ended earlier (a stored run) or the server went away.
      const run = await api(`v1/runs/${encodeURIComponent(runId)}`, { signal });
      if (["completed", "failed", "stopped", "interrupted"].includes(run.run.status) && run.run.last_seq <= last) return last;
    } catch (err) {
      if (signal && signal.aborted) return last;
      if (err instanceof ApiError && err.status !== 502 && err.status !== 503) throw err;
      wentOffline();
      if (onReconnecting) onReconnecting();
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 4000);
  }
}

/**
 * Upload one file with ingest progress: onProgress({phase: "upload", loaded, total}) while the bytes go,
 * then the server's NDJSON lines ({type: "progress" | "done" | "error", ...}).
 */
export function uploadFile(file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "v1/kb/documents?progress=true");
    if (auth.key) xhr.setRequestHeader("Authorization", `Bearer ${auth.key}`);
    let seen = 0;
    let final = null;
    const readLines = () => {
      if (xhr.status !== 201) return;
      const text = xhr.responseText;
      let nl;
      while ((nl = text.indexOf("\n", seen)) >= 0) {
        const line = text.slice(seen, nl);
        seen = nl + 1;
        if (!line.trim()) continue;
        const item = JSON.parse(line);
        if (item.type === "done" || item.type === "error") final = item;
        onProgress({ phase: "ingest", ...item });
      }
    };
    xhr.upload.onprogress = (e) => onProgress({ phase: "upload", loaded: e.loaded, total: e.lengthComputable ? e.total : file.size });
    xhr.onprogress = readLines;
    xhr.onload = () => {
      readLines();
      if (xhr.status === 201) {
        if (final && final.type === "done") resolve(final);
        else reject(new ApiError(500, { error: (final && final.error) || { code: "kb.error", message: "the ingest did not finish" } }));
        return;
      }
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status === 401) emit("unauthorized");
      reject(new ApiError(xhr.status, body));
    };
    xhr.onerror = () => { wentOffline(); reject(new ApiError(0, { error: { code: "net.unreachable", message: "server unreachable" } })); };
    const form = new FormData();
    form.append("files", file, file.name);
    xhr.send(form);
  });
}
