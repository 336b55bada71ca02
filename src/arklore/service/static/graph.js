// Graph explorer: suggestions (the operators related to the most people), search by any name,
// her neighbourhood drawn with the fcose layout (labels kept apart), an edge's evidence.
"use strict";
nav("/");
let cy = null;
const $ = id => document.getElementById(id);

async function suggest() {
  try {
    const data = await api("/v1/operators?sort=connected&limit=12");
    $("suggestions").innerHTML = data.operators.map(o =>
      `<li class="result" data-node="${esc(o.id)}" title="${esc(o.id)}">${esc(o.name)} <span class="muted">${o.relations}</span></li>`).join("");
  } catch (e) { $("suggestions").innerHTML = `<li class="error">${esc(errorText(e))}</li>`; }
}

$("legend").innerHTML = Object.entries(CATEGORY_COLOURS).map(([k, c]) =>
  `<span><i style="background:${c}"></i>${esc(CATEGORY_LABELS[k])}</span>`).join("");

// the people a name finds (the graph's nodes only); with `open`, the best one's graph too
async function search(q, open) {
  $("status").textContent = "searching…";
  try {
    const data = await api(`/v1/search?q=${encodeURIComponent(q)}&limit=12`);
    if ($("q").value.trim() !== q) return;  // typed on meanwhile
    const res = data.results.filter(r => r.node);
    $("status").textContent = res.length ? "" : "nothing found";
    $("results").innerHTML = res.map(r =>
      `<li class="result" data-node="${esc(r.node)}" title="${esc(r.id)} (${esc(r.matched)})">${esc(r.name)}</li>`).join("");
    if (open && res.length) show(res[0].node);
  } catch (e) { $("status").innerHTML = `<span class="error">${esc(errorText(e))}</span>`; }
}

for (const list of ["results", "suggestions"]) {
  $(list).addEventListener("click", e => {
    const li = e.target.closest("li.result");
    if (li) show(li.dataset.node);
  });
}
$("search").addEventListener("submit", e => { e.preventDefault(); const q = $("q").value.trim(); if (q) search(q, true); });
let typing = null;
$("q").addEventListener("input", () => {
  clearTimeout(typing);
  const q = $("q").value.trim();
  if (q) typing = setTimeout(() => search(q, false), 250); else $("results").innerHTML = "";
});

async function show(node) {
  $("status").textContent = "loading…";
  let data;
  try {
    data = await api(`/v1/operators/${encodeURIComponent(node)}/relations?limit=${$("limit").value}`);
  } catch (e) { $("status").innerHTML = `<span class="error">${esc(errorText(e))}</span>`; return; }
  history.replaceState(null, "", `/?op=${encodeURIComponent(node)}`);
  const me = data.operator;
  const nodes = new Map([[me.id, {data: {id: me.id, label: me.name, kind: me.kind, center: 1}}]]);
  const edges = [];
  for (const e of [...data.out, ...(data.in || [])]) {
    for (const [id, name] of [[e.source, e.source_name], [e.target, e.target_name]]) {
      if (!nodes.has(id)) nodes.set(id, {data: {id, label: name, kind: id.startsWith("npc:") ? "npc" : "operator"}});
    }
    edges.push({data: {id: `${e.source}->${e.target}:${e.predicate}`, source: e.source, target: e.target,
      label: e.predicate, category: e.category, colour: CATEGORY_COLOURS[e.category] || "#999",
      width: 1 + 4 * e.strength, strength: e.strength}});
  }
  $("status").textContent = `${me.name}: ${data.out.length} relations, ${(data.in || []).length} incoming`;
  $("graph-area").style.display = "";
  draw([...nodes.values()], edges);
  table(me, data);
}

// fcose (npm's cytoscape-fcose) sizes each node with its label and keeps them apart; it starts
// from a ring around her (START), not random places, so a neighbourhood is drawn the same way
// on every visit
const START = {name: "concentric", concentric: n => n.data("center") ? 2 : 1, levelWidth: () => 1,
  minNodeSpacing: 30, animate: false, fit: false};
const LAYOUT = {name: "fcose", quality: "proof", animate: false, randomize: false,
  nodeDimensionsIncludeLabels: true, nodeSeparation: 75, idealEdgeLength: () => 150,
  nodeRepulsion: () => 20000, packComponents: false, padding: 20};

function draw(nodes, edges) {
  if (typeof cytoscape === "undefined" || typeof cytoscapeFcose === "undefined") {
    $("cy").innerHTML = '<p class="error" style="padding:1em">cytoscape.js (with cytoscape-fcose) is not installed: run <code>make web</code>.</p>';
    return;
  }
  if (cy) cy.destroy();
  cy = cytoscape({
    container: $("cy"),
    elements: {nodes, edges},
    wheelSensitivity: 0.3,
    style: [
      {selector: "node", style: {"label": "data(label)", "font-size": 12, "background-color": "#64748b",
        "color": "#111827", "text-valign": "bottom", "text-margin-y": 4, "width": 18, "height": 18,
        "text-background-color": "#f8fafc", "text-background-opacity": 0.9, "text-background-padding": 2,
        "z-index": 10}},
      {selector: "node[kind = 'npc']", style: {"background-color": "#cbd5e1", "shape": "round-rectangle"}},
      {selector: "node[center = 1]", style: {"background-color": "#2563eb", "width": 30, "height": 30, "font-weight": "bold"}},
      {selector: "edge", style: {"curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "data(colour)",
        "target-arrow-color": "data(colour)", "width": "data(width)", "label": "data(label)", "font-size": 10,
        "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 0.8,
        "text-background-padding": 1, "color": "#374151"}},
      {selector: "edge:selected", style: {"line-color": "#111827", "target-arrow-color": "#111827", "width": 6}},
    ],
    layout: START,
  });
  cy.layout(LAYOUT).run();
  cy.on("tap", "edge", evt => { cy.edges().unselect(); evt.target.select(); evidence(evt.target.data("source"), evt.target.data("target")); });
  cy.on("tap", "node", evt => { if (!evt.target.data("center")) show(evt.target.id()); });
  window.arkloreGraph = cy;
}

function table(me, data) {
  $("rel-title").textContent = `${me.name}'s relations`;
  const rows = [...data.out.map(e => ["→", e]), ...(data.in || []).map(e => ["←", e])];
  $("rel-table").innerHTML = "<tr><th></th><th>who</th><th>predicate</th><th>strength</th><th>origin</th><th>text</th></tr>" +
    rows.map(([dir, e]) => `<tr class="clickable rel-row" data-a="${esc(e.source)}" data-b="${esc(e.target)}">` +
      `<td>${dir}</td><td>${esc(dir === "→" ? e.target_name : e.source_name)}</td><td>${esc(e.predicate)}</td>` +
      `<td class="tokens">${e.strength.toFixed(2)}</td>` +
      `<td><i style="display:inline-block;width:.8em;height:.8em;border-radius:50%;background:${CATEGORY_COLOURS[e.category]}"></i> ${esc(e.category)}</td>` +
      `<td>${esc(e.text || e.description || "")}</td></tr>`).join("");
}

$("rel-table").addEventListener("click", e => {
  const tr = e.target.closest("tr.rel-row");
  if (tr) evidence(tr.dataset.a, tr.dataset.b);
});

async function evidence(a, b) {
  const box = $("evidence");
  box.innerHTML = '<span class="muted">loading evidence…</span>';
  let data;
  try { data = await api(`/v1/relations/${encodeURIComponent(a)}/${encodeURIComponent(b)}`); }
  catch (e) { box.innerHTML = `<span class="error">${esc(errorText(e))}</span>`; return; }
  const edgeLine = e => `<div><b>${esc(e.source_name)} → ${esc(e.target_name)}</b>: ${esc(e.predicate)} ` +
    `<span class="muted">(${e.strength.toFixed(2)}, ${esc(e.category)})</span>` +
    (e.text || e.description ? `<div>${esc(e.text || e.description)}</div>` : "") + "</div>";
  let html = `<h2>${esc(data.a.name)} ⇄ ${esc(data.b.name)}</h2>` + [...data.edges, ...data.reverse].map(edgeLine).join("");
  if (!data.evidence.length) html += '<p class="muted">No evidence lines are cited for this pair (interaction statistics only).</p>';
  for (const ev of data.evidence) {
    html += `<div class="evidence-item"><div>${stageLink(ev.stage_path, ev.line_no, `${stageLabel(ev.stage ? {...ev.stage, path: ev.stage_path} : null) || ev.stage_path} #L${ev.line_no}`)}` +
      (ev.stale ? ' <span class="bad">(stale: the line changed)</span>' : "") + "</div>" +
      ev.context.map(ln => lineRow(ln)).join("") + "</div>";
  }
  box.innerHTML = html;
}

suggest();
const start = param("op") || param("q");
if (start) { $("q").value = start; show(start); }
