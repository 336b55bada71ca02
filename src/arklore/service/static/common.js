// Shared helpers of the arklore pages: the JSON API, escaping, the navigation bar.
"use strict";
const CATEGORY_COLOURS = {
  "curated": "#d97706", "story-direct": "#dc2626", "story-reported": "#db2777",
  "evidence-built": "#7c3aed", "interaction": "#94a3b8",
};
const CATEGORY_LABELS = {
  "curated": "curated matrix / import", "story-direct": "story (direct)",
  "story-reported": "story (reported)", "evidence-built": "evidence-built", "interaction": "interaction",
};

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

async function api(path, options = {}) {
  const res = await fetch(path, options);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) {
    const err = new Error((data && data.message) || `HTTP ${res.status}`);
    err.status = res.status; err.data = data;
    throw err;
  }
  return data;
}

function errorText(err) {
  let msg = err.message;
  if (err.data && err.data.closest && err.data.closest.length) msg += ` (did you mean ${err.data.closest.join(", ")}?)`;
  else if (err.data && err.data.hint) msg += ` (${err.data.hint})`;
  return msg;
}

function param(name) { return new URLSearchParams(location.search).get(name); }

function stageLink(path, lineNo, label) {
  const href = `/stage?path=${encodeURIComponent(path)}${lineNo ? `#L${lineNo}` : ""}`;
  return `<a href="${href}">${esc(label || path)}</a>`;
}

function stageLabel(st) {
  if (!st) return "";
  return [st.code, st.name ? `《${st.name}》` : null, st.event ? `(${st.event})` : null].filter(Boolean).join(" ") || st.path;
}

function lineRow(ln, opts = {}) {
  const cls = ["line"];
  if (ln.cited) cls.push("cited");
  if (ln.kind === "choice") cls.push("choice");
  if (opts.target) cls.push("target");
  const who = ln.kind === "narration" ? "" : (ln.speaker || "");
  const opt = ln.options && ln.options.length ? ` <span class="branch">[${ln.options.map(esc).join(" / ")}]</span>` : "";
  const br = ln.branch ? ` <span class="branch" title="inside a choice branch">分支 ${esc(ln.branch)}</span>` : "";
  const cited = (ln.cited_by || []).map(c =>
    `<a class="badge" href="/?op=${encodeURIComponent(c.source)}" title="${esc(c.category)}">${esc(c.source_name)}→${esc(c.target_name)} ${esc(c.predicate)}</a>`).join("");
  const id = opts.anchor ? ` id="L${ln.line_no}"` : "";
  return `<div class="${cls.join(" ")}"${id} data-line="${ln.line_no}"><span class="no">${ln.line_no}</span>` +
    `<span class="who">${esc(who)}</span><span class="text">${esc(ln.text)}${opt}${br}${cited}</span></div>`;
}

function nav(active) {
  const links = [["/", "Graph"], ["/operator", "Operator"], ["/stage", "Stage reader"], ["/review", "Review"], ["/chat", "Chat"]];
  const h = document.createElement("header");
  h.innerHTML = `<span class="brand">arklore</span>` + links.map(([href, label]) =>
    `<a href="${href}"${href === active ? ' class="active"' : ""}>${label}</a>`).join("") +
    `<a href="/docs" style="margin-left:auto">API</a>`;
  document.body.prepend(h);
}
