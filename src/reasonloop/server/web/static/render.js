// Untrusted text to DOM. Model output is Markdown rendered by markdown-it with raw HTML off (any
// tag in it shows as text), links limited to http(s)/mailto, and the HTML it makes passed through
// DOMPurify before it touches the page. Everything else (document text, file names, tool
// output) only ever goes in as textContent.

const md = window.markdownit({ html: false, linkify: false, breaks: false, typographer: false });
const SAFE_LINK = /^(https?:|mailto:|#)/i;
md.validateLink = (url) => SAFE_LINK.test(url.trim());
const defaultLinkOpen = md.renderer.rules.link_open || ((tokens, i, options, env, self) => self.renderToken(tokens, i, options));
md.renderer.rules.link_open = (tokens, i, options, env, self) => {
  tokens[i].attrSet("rel", "noopener noreferrer nofollow");
  tokens[i].attrSet("target", "_blank");
  return defaultLinkOpen(tokens, i, options, env, self);
};

const PURIFY = {
  ALLOWED_TAGS: ["p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a"],
  ALLOWED_ATTR: ["href", "title", "rel", "target", "start"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  RETURN_DOM_FRAGMENT: true,
};

const MARKER = /\[(\d{1,3})\]/g;
const HAS_MARKER = /\[\d{1,3}\]/;

/** Markdown to a sanitised fragment, with `[n]` markers that match a citation turned into buttons. */
export function renderMarkdown(text, markers = new Set()) {
  const fragment = window.DOMPurify.sanitize(md.render(text || ""), PURIFY);
  if (markers.size) linkMarkers(fragment, markers);
  return fragment;
}

function linkMarkers(root, markers) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentNode.closest && node.parentNode.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) if (HAS_MARKER.test(walker.currentNode.data)) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const parts = document.createDocumentFragment();
    let at = 0;
    for (const match of node.data.matchAll(MARKER)) {
      const n = Number(match[1]);
      if (!markers.has(n)) continue;
      parts.append(node.data.slice(at, match.index));
      const button = document.createElement("button");
      button.type = "button";
      button.className = "cite";
      button.dataset.marker = String(n);
      button.textContent = `[${n}]`;
      parts.append(button);
      at = match.index + match[0].length;
    }
    parts.append(node.data.slice(at));
    node.replaceWith(parts);
  }
}

/** An element with text content only. */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** `text` into `target` as text nodes, `text.slice(from, to)` in a <mark>; returns the mark. */
export function markRange(target, text, from, to) {
  const mark = el("mark", "quote", text.slice(from, to));
  target.replaceChildren(text.slice(0, from), mark, text.slice(to));
  return mark;
}

export function formatBytes(n) {
  if (!Number.isFinite(n)) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function formatTime(ts) {
  if (!ts) return "";
  return new Date(ts * 1000).toLocaleString();
}
