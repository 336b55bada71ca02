// The curated relations of the review page: each relation of the matrices the next graph build
// layers, with its description, its status and its evidence lines (+-1 line of context), and a
// reviewer's verdict on it: confirm or reject (with a note), through POST /v1/curated/confirm
// and /v1/curated/reject with the admin token the page asks for. A verdict is on the text as
// shown (its sha): a relation edited since is refused (409) and shown again.
"use strict";
const CURATED_PAGE = 25;
let curatedShown = CURATED_PAGE;

function curatedCard(r, i) {
  const verdict = r.verdict
    ? `<div class="muted verdict">${esc(r.verdict)} by ${esc(r.by)} at ${esc(r.at)}${r.note ? ` · ${esc(r.note)}` : ""}</div>` : "";
  const ev = r.evidence.map(id => `<div class="evidence" data-id="${esc(id)}"><span class="muted">${esc(id)}</span></div>`).join("");
  return `<div class="card curated" data-i="${i}">` +
    `<b>${esc(r.from_name)} → ${esc(r.to_name)}</b> <span class="badge">${esc(r.predicate)}</span> ` +
    `<span class="status status-${esc(r.status)}">${esc(r.status)}</span> <span class="muted">${esc(r.matrix)}:${r.line}</span>` +
    `<div class="description">${esc(r.description || "(no description)")}</div>${verdict}` +
    `<div class="lines">${ev || '<span class="muted">no evidence lines</span>'}</div>` +
    `<div class="row actions" style="align-items:center;margin-top:.4em">` +
    `<input class="note" size="40" placeholder="note (optional)" value="${esc(r.note || "")}">` +
    `<button class="confirm">Confirm</button> <button class="reject secondary">Reject</button> ` +
    `<span class="result muted"></span></div></div>`;
}

function evidenceParts(id) {
  const m = /^(.+)#(\d+):[0-9a-f]+$/.exec(id);
  return m ? {path: m[1], no: Number(m[2])} : null;
}

async function showEvidence(el) {
  const at = evidenceParts(el.dataset.id);
  if (!at) return;
  const url = `/v1/stages/${at.path.split("/").map(encodeURIComponent).join("/")}/lines` +
    `?from=${Math.max(1, at.no - 1)}&to=${at.no + 1}`;
  try {
    const d = await api(url);
    el.innerHTML = `<div class="muted">${stageLink(at.path, at.no, stageLabel(d.stage) || at.path)}</div>` +
      d.lines.map(ln => lineRow(ln, {target: ln.line_no === at.no})).join("");
  } catch (e) { el.innerHTML = `<span class="error">${esc(el.dataset.id)}: ${esc(errorText(e))}</span>`; }
}

let curatedRows = [];

async function loadCurated() {
  const out = await api("/v1/curated");
  document.getElementById("curated-counts").textContent =
    Object.entries(out.counts).map(([k, v]) => `${v} ${k}`).join(" · ");
  const want = document.getElementById("curated-filter").value;
  const q = document.getElementById("curated-q").value.trim();
  curatedRows = out.relations.filter(r => (!want || r.status === want) &&
    (!q || `${r.from_name} ${r.to_name} ${r.from} ${r.to}`.includes(q)));
  const shown = curatedRows.slice(0, curatedShown);
  const list = document.getElementById("curated-list");
  list.innerHTML = shown.map(curatedCard).join("") || '<p class="muted">no curated relations here</p>';
  document.getElementById("curated-more").style.display = curatedRows.length > shown.length ? "" : "none";
  await Promise.all([...list.querySelectorAll(".evidence[data-id]")].map(showEvidence));
}

async function curatedVerdict(card, verdict) {
  const r = curatedRows[Number(card.dataset.i)];
  const body = {from: r.from, to: r.to, predicate: r.predicate, sha: r.sha,
    by: document.getElementById("reviewer").value.trim() || "admin", note: card.querySelector(".note").value};
  const result = card.querySelector(".result");
  try {
    await api(`/v1/curated/${verdict}`, {method: "POST",
      headers: {"Authorization": `Bearer ${document.getElementById("token").value}`, "Content-Type": "application/json"},
      body: JSON.stringify(body)});
    await loadCurated();
    document.getElementById("curated-status").textContent = `${r.from_name} → ${r.to_name}: ${verdict === "confirm" ? "confirmed" : "rejected"}`;
  } catch (e) { result.innerHTML = `<span class="error">${esc(errorText(e))}</span>`; }
}

function initCurated() {
  const list = document.getElementById("curated-list");
  list.addEventListener("click", e => {
    const card = e.target.closest(".card.curated");
    if (!card) return;
    if (e.target.classList.contains("confirm")) curatedVerdict(card, "confirm");
    if (e.target.classList.contains("reject")) curatedVerdict(card, "reject");
  });
  const reload = () => { curatedShown = CURATED_PAGE; loadCurated().catch(showCuratedError); };
  document.getElementById("curated-filter").addEventListener("change", reload);
  document.getElementById("curated-q").addEventListener("change", reload);
  document.getElementById("curated-more").addEventListener("click", () => {
    curatedShown += CURATED_PAGE; loadCurated().catch(showCuratedError);
  });
  const who = document.getElementById("reviewer");
  who.value = sessionStorage.getItem("arklore-reviewer") || "";
  who.addEventListener("change", () => sessionStorage.setItem("arklore-reviewer", who.value));
  return loadCurated().catch(showCuratedError);
}

function showCuratedError(e) {
  document.getElementById("curated-status").innerHTML = `<span class="error">${esc(errorText(e))}</span>`;
}
