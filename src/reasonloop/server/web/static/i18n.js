// Interface text in English and Chinese; the browser's language chooses, the switch overrides.

const STRINGS = {
  en: {
    "nav.chat": "Chat", "nav.documents": "Documents", "nav.search": "Retrieval test",
    "lang.label": "Language",
    "conv.new": "New conversation", "conv.untitled": "Untitled", "conv.rename": "Rename", "conv.delete": "Delete",
    "conv.confirmDelete": "Delete this conversation?", "conv.renamePrompt": "New title",
    "chat.placeholder": "Ask about your documents…", "chat.send": "Send", "chat.stop": "Stop",
    "strategy.label": "Strategy", "strategy.agent": "agent",
    "mode.label": "Thinking mode", "mode.none": "None: the strategy below",
    "mode.noneHint": "Pick a mode to say how hard to think; the strategy and its settings then follow from it.",
    "mode.unavailable": "not installed", "mode.runs": "runs {strategy}",
    "trace.route": "Route", "route.none": "no search", "route.single": "one search", "route.multi_hop": "multi-hop",
    "route.research": "research", "route.by.model": "decided by the model", "route.by.rule": "decided by the rule",
    "route.wanted": "wanted {route}",
    "model.label": "Model", "model.inUse": "in use", "model.found": "served on the server's machine",
    "model.none": "no model", "model.instruct": "instruction-tuned", "model.base": "base model", "model.unknown": "kind unknown",
    "model.tools": "tool calls", "model.noTools": "no tool calls", "model.tokens": "tokens of context",
    "model.foundNote": "Found on the server's machine (choose another here, or set [llm] in reasonloop.toml):",
    "settings.title": "Settings", "settings.reset": "Reset to defaults", "settings.default": "default: {value}",
    "settings.unset": "none", "settings.on": "on", "settings.off": "off",
    "settings.none": "This strategy has no settings.", "settings.invalid": "Fix the highlighted settings first.",
    "settings.listHint": "one per line",
    "trace.label": "Reasoning", "trace.steps": "{n} steps", "trace.step": "1 step",
    "trace.running": "running", "trace.done": "done", "trace.failed": "failed", "trace.timed_out": "timed out",
    "trace.waiting": "waiting", "trace.input": "Input", "trace.observation": "Observation", "trace.plan": "Plan",
    "trace.thought": "Thought", "trace.search": "search", "trace.skipped": "not run",
    "trace.resumed": "The server running this answer stopped; another one goes on from the steps it had finished.",
    "research.title": "Research", "research.round": "Round {n}", "research.waiting": "waiting",
    "research.running": "researching", "research.done": "done", "research.failed": "failed", "research.cancelled": "cancelled",
    "research.tokens": "{n} tokens", "research.tools": "{n} tool calls", "research.judge": "Judge",
    "research.report": "Report", "research.sections": "{n} sections", "research.section": "1 section",
    "research.citations": "{n} citations", "research.citation": "1 citation",
    "research.unestablished": "Not established",
    "judge.answer": "answer", "judge.caveat": "answer with a caveat", "judge.gap": "research the gaps",
    "judge.reconcile": "reconcile a contradiction", "judge.unanswerable": "unanswerable",
    "trace.awaiting": "awaiting approval",
    "approval.title": "This call waits for your approval", "approval.arguments": "Arguments (edit to change them)",
    "approval.reason": "Reason (the model reads a rejection's)", "approval.confirm": "Confirm", "approval.reject": "Reject",
    "approval.sent": "Answer sent", "approval.expires": "Rejected if unanswered at {at}",
    "approval.notJson": "The arguments are not JSON: {problem}", "approval.notObject": "The arguments must be a JSON object",
    "approval.titleDecided": "Approval", "approval.by": "by {who}", "approval.via": "via {via}",
    "approval.decided.confirm": "Confirmed", "approval.decided.modify": "Run with changed arguments",
    "approval.decided.reject": "Rejected",
    "turn.copy": "Copy", "turn.copied": "Copied", "turn.regenerate": "Regenerate",
    "turn.reason": "What was wrong? (optional)", "turn.sendFeedback": "Send", "turn.thanks": "Thanks for the feedback",
    "turn.sources": "Sources", "turn.good": "Good", "turn.bad": "Bad",
    "usage.line": "{calls} model calls · {tokens} tokens · {tools} tool calls · {searches} searches · {secs} s · {reason}",
    "stop.final": "finished", "stop.max_rounds": "round budget reached", "stop.max_tool_calls": "tool-call budget reached",
    "stop.max_tokens": "token budget reached", "stop.timeout": "time budget reached", "stop.length": "cut at the output limit",
    "stop.stopped": "stopped", "stop.guard": "stopped by a guard", "stop.error": "failed", "stop.interrupted": "interrupted",
    "run.failed": "The run failed",
    "docs.drop": "Drop files here, or", "docs.choose": "choose files", "docs.title": "Title", "docs.source": "Source",
    "docs.chunks": "Chunks", "docs.updated": "Updated", "docs.delete": "Delete", "docs.empty": "No documents yet.",
    "docs.confirmDelete": "Delete this document?",
    "docs.stats": "{docs} documents · {chunks} chunks · {bytes} · model {model}",
    "up.uploading": "uploading {pct}%", "up.ingesting": "embedding {done} / {total} chunks", "up.reading": "reading",
    "up.done": "added · {chunks} chunks", "up.unchanged": "unchanged", "up.failed": "failed: {reason}",
    "up.tooLarge": "too large (limit {limit})", "up.unsupported": "unsupported type",
    "doc.back": "← Documents", "doc.meta": "{source} · {chunks} chunks · updated {updated}",
    "search.placeholder": "Query", "search.topk": "Top k", "search.run": "Search",
    "search.lexical": "Lexical (BM25)", "search.dense": "Dense (vectors)", "search.hybrid": "Hybrid (fused)",
    "search.none": "no hits", "search.score": "score",
    "cite.whole": "Open the whole document", "cite.page": "page {page}", "cite.missing": "The document is no longer in the knowledge base.",
    "cite.quoteOnly": "The passage could not be shown: this is the quoted text alone.",
    "cite.pageImage": "Show it on the page", "cite.pageImageAlt": "Page {page}, the quoted text highlighted",
    "cite.pageLoading": "rendering the page…", "cite.pageFailed": "The page could not be shown: {reason}",
    "auth.title": "API key", "auth.hint": "This server requires an API key. It is kept for this browser tab only.",
    "auth.submit": "Sign in", "auth.logout": "Sign out", "auth.wrong": "The server did not accept this key.",
    "auth.expired": "Your key was refused; sign in again.",
    "net.down": "Server unreachable, reconnecting…", "net.back": "Reconnected",
  },
  zh: {
    "nav.chat": "对话", "nav.documents": "文档", "nav.search": "检索测试",
    "lang.label": "语言",
    "conv.new": "新对话", "conv.untitled": "未命名", "conv.rename": "重命名", "conv.delete": "删除",
    "conv.confirmDelete": "删除这个对话？", "conv.renamePrompt": "新标题",
    "chat.placeholder": "就你的文档提问…", "chat.send": "发送", "chat.stop": "停止",
    "strategy.label": "推理策略", "strategy.agent": "智能体",
    "mode.label": "思考模式", "mode.none": "不用：使用下方的策略",
    "mode.noneHint": "选择一个模式来决定想得多深；策略及其设置随模式而定。",
    "mode.unavailable": "未安装", "mode.runs": "运行 {strategy}",
    "trace.route": "路线", "route.none": "不检索", "route.single": "检索一次", "route.multi_hop": "多跳",
    "route.research": "研究", "route.by.model": "由模型决定", "route.by.rule": "由规则决定",
    "route.wanted": "原想走 {route}",
    "model.label": "模型", "model.inUse": "当前使用", "model.found": "服务器本机提供的模型",
    "model.none": "没有模型", "model.instruct": "指令微调", "model.base": "基础模型", "model.unknown": "类型未知",
    "model.tools": "支持工具调用", "model.noTools": "不支持工具调用", "model.tokens": "个上下文词元",
    "model.foundNote": "在服务器本机上找到（可在此选择其他模型，或在 reasonloop.toml 的 [llm] 中设置）：",
    "settings.title": "设置", "settings.reset": "恢复默认", "settings.default": "默认：{value}",
    "settings.unset": "无", "settings.on": "开", "settings.off": "关",
    "settings.none": "此策略没有设置项。", "settings.invalid": "请先修正标出的设置。",
    "settings.listHint": "每行一项",
    "trace.label": "推理过程", "trace.steps": "{n} 步", "trace.step": "1 步",
    "trace.running": "运行中", "trace.done": "完成", "trace.failed": "失败", "trace.timed_out": "超时",
    "trace.waiting": "等待", "trace.input": "输入", "trace.observation": "观察", "trace.plan": "计划",
    "trace.thought": "思考", "trace.search": "检索", "trace.skipped": "未运行",
    "trace.resumed": "运行此回答的服务器已停止，另一台服务器从已完成的步骤继续。",
    "research.title": "研究", "research.round": "第 {n} 轮", "research.waiting": "等待",
    "research.running": "研究中", "research.done": "完成", "research.failed": "失败", "research.cancelled": "已取消",
    "research.tokens": "{n} 词元", "research.tools": "{n} 次工具调用", "research.judge": "评判",
    "research.report": "报告", "research.sections": "{n} 节", "research.section": "1 节",
    "research.citations": "{n} 处引用", "research.citation": "1 处引用",
    "research.unestablished": "未能确定",
    "judge.answer": "作答", "judge.caveat": "附带说明作答", "judge.gap": "研究缺口",
    "judge.reconcile": "调和矛盾", "judge.unanswerable": "无法回答",
    "trace.awaiting": "等待批准",
    "approval.title": "此调用等待你的批准", "approval.arguments": "参数（可编辑修改）",
    "approval.reason": "理由（拒绝的理由会给模型看）", "approval.confirm": "批准", "approval.reject": "拒绝",
    "approval.sent": "已提交", "approval.expires": "若到 {at} 仍无答复则拒绝",
    "approval.notJson": "参数不是 JSON：{problem}", "approval.notObject": "参数必须是 JSON 对象",
    "approval.titleDecided": "批准", "approval.by": "由 {who}", "approval.via": "经由 {via}",
    "approval.decided.confirm": "已批准", "approval.decided.modify": "已修改参数后运行",
    "approval.decided.reject": "已拒绝",
    "turn.copy": "复制", "turn.copied": "已复制", "turn.regenerate": "重新生成",
    "turn.reason": "哪里不对？（可选）", "turn.sendFeedback": "发送", "turn.thanks": "感谢反馈",
    "turn.sources": "来源", "turn.good": "有帮助", "turn.bad": "没帮助",
    "usage.line": "{calls} 次模型调用 · {tokens} 个词元 · {tools} 次工具调用 · {searches} 次检索 · {secs} 秒 · {reason}",
    "stop.final": "已完成", "stop.max_rounds": "达到轮数上限", "stop.max_tool_calls": "达到工具调用上限",
    "stop.max_tokens": "达到词元上限", "stop.timeout": "达到时间上限", "stop.length": "输出达到长度上限",
    "stop.stopped": "已停止", "stop.guard": "被守卫拦下", "stop.error": "失败", "stop.interrupted": "已中断",
    "run.failed": "运行失败",
    "docs.drop": "把文件拖到这里，或", "docs.choose": "选择文件", "docs.title": "标题", "docs.source": "来源",
    "docs.chunks": "分块", "docs.updated": "更新时间", "docs.delete": "删除", "docs.empty": "还没有文档。",
    "docs.confirmDelete": "删除这个文档？",
    "docs.stats": "{docs} 个文档 · {chunks} 个分块 · {bytes} · 模型 {model}",
    "up.uploading": "上传中 {pct}%", "up.ingesting": "向量化 {done} / {total} 个分块", "up.reading": "读取中",
    "up.done": "已添加 · {chunks} 个分块", "up.unchanged": "未变化", "up.failed": "失败：{reason}",
    "up.tooLarge": "文件过大（上限 {limit}）", "up.unsupported": "不支持的类型",
    "doc.back": "← 文档", "doc.meta": "{source} · {chunks} 个分块 · 更新于 {updated}",
    "search.placeholder": "查询", "search.topk": "前 k 条", "search.run": "检索",
    "search.lexical": "词法（BM25）", "search.dense": "稠密（向量）", "search.hybrid": "混合（融合）",
    "search.none": "无结果", "search.score": "得分",
    "cite.whole": "打开整篇文档", "cite.page": "第 {page} 页", "cite.missing": "该文档已不在知识库中。",
    "cite.quoteOnly": "无法显示所在段落，这里只是引用的原文。",
    "cite.pageImage": "在页面上查看", "cite.pageImageAlt": "第 {page} 页，引用的文字已高亮",
    "cite.pageLoading": "正在渲染页面…", "cite.pageFailed": "无法显示页面：{reason}",
    "auth.title": "API 密钥", "auth.hint": "此服务器需要 API 密钥，只在当前标签页中保留。",
    "auth.submit": "登录", "auth.logout": "退出", "auth.wrong": "服务器不接受这个密钥。",
    "auth.expired": "密钥被拒绝，请重新登录。",
    "net.down": "无法连接服务器，正在重连…", "net.back": "已重新连接",
  },
};

let lang = pickLanguage();

function pickLanguage() {
  const chosen = localStorage.getItem("rl.lang");
  if (chosen && STRINGS[chosen]) return chosen;
  const wanted = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || "en"];
  for (const tag of wanted) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (STRINGS[base]) return base;
  }
  return "en";
}

export function language() { return lang; }

export function t(key, values = {}) {
  const text = STRINGS[lang][key] ?? STRINGS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in values ? String(values[name]) : `{${name}}`));
}

/**
 * What the server sends in English, in the interface's language where it says it: a catalog entry's
 * `name` or `description` (its `translations`), a settings field's `title` or `description` (its
 * schema's `x-translations`).
 */
export function localized(item, key) {
  if (!item) return "";
  const other = (item.translations || item["x-translations"] || {})[lang];
  return (other && other[key]) || item[key] || "";
}

/** Fill every [data-i18n] element's text and [data-i18n-placeholder] placeholder under root. */
export function translate(root = document) {
  if (root === document) document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
}

export function setLanguage(next) {
  if (!STRINGS[next]) return;
  lang = next;
  localStorage.setItem("rl.lang", next);
  translate();
  window.dispatchEvent(new CustomEvent("rl:language"));
}
