// skillos view: one page, hash routes, plain JS (no framework, no network beyond this server).
// Each route reads one JSON document: from /api/doc when served (polled, so a run in progress
// updates as rows are appended), or from data/*.js files in a static export (file:// allowed).
"use strict";

const STATIC = !!window.SKILLOS_STATIC;
window.SKILLOS_DOCS = window.SKILLOS_DOCS || {};
const POLL_MS = 2000;
const state = {};  // per-page UI state (filters, selected snapshot) that survives a re-render

// -- formatting -----------------------------------------------------------------------------
function esc(v) {
  return String(v === null || v === undefined ? "" : v).replace(/[&<>"']/g,
    c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
const NA = '<span class="muted">n/a</span>';
// Every value comes from a file or a ledger row that anyone could have written: each formatter
// takes any type, formats a finite number, and shows anything else as escaped text.
function isNum(x) { return typeof x === "number" && isFinite(x); }
function other(x) { return x === null || x === undefined || x === "" ? NA : esc(typeof x === "object" ? JSON.stringify(x) : x); }
function pct(x) { return isNum(x) ? (100 * x).toFixed(1) + "%" : other(x); }
function pts(x) { return isNum(x) ? (x >= 0 ? "+" : "") + (100 * x).toFixed(1) + " pts" : other(x); }
function num(x, digits) {
  if (!isNum(x)) return other(x);
  return digits === undefined ? String(x) : x.toPrecision(digits).replace(/\.?0+$/, "");
}
function pval(x) { return isNum(x) ? x.toPrecision(3) : other(x); }
function fixed(x, d) { return isNum(x) ? x.toFixed(d) : other(x); }
function arr(x) { return Array.isArray(x) ? x : (x === null || x === undefined ? [] : [x]); }
function obj(x) { return x && typeof x === "object" && !Array.isArray(x) ? x : {}; }
function str(x) { return x === null || x === undefined ? "" : typeof x === "object" ? JSON.stringify(x) : String(x); }
function ident(x) { return "#" + esc(str(x)); }  // a ledger row id
function utc(seconds) {
  if (!isNum(seconds)) return other(seconds);
  const d = new Date(seconds * 1000);
  return isNaN(d.getTime()) ? other(seconds) : esc(d.toISOString().slice(0, 19).replace("T", " "));
}
function outcome(success) {
  if (success === true) return '<span class="won">won</span>';
  if (success === false) return '<span class="lost">lost</span>';
  return '<span class="unmeasured">unmeasured</span>';
}
// a row's measured trials (eval.trials: `trials`, null where a play was unmeasured), or its one outcome
function measuredTrials(r) {
  if (Array.isArray(r.trials)) return r.trials.filter(isNum);
  return r.unmeasured || typeof r.success !== "boolean" ? [] : [r.success ? 1 : 0];
}
function rowMean(r) { const m = measuredTrials(r); return m.length ? m.reduce((a, b) => a + b, 0) / m.length : null; }
function outcomeWord(r) { const m = rowMean(r); return m === null ? "unmeasured" : m === 1 ? "won" : m === 0 ? "lost" : "mixed"; }
function rowOutcome(r) {  // a game of trials: its plays won of measured, and the unmeasured ones
  if (!Array.isArray(r.trials)) return outcome(r.unmeasured ? null : r.success);
  const m = measuredTrials(r), lost = r.trials.length - m.length;
  return m.length ? `<span class="${outcomeWord(r) === "lost" ? "lost" : "won"}">${num(m.reduce((a, b) => a + b, 0))}/${m.length} trials won</span>` +
    (lost ? ` <span class="unmeasured">${lost} unmeasured</span>` : "") : outcome(null);
}
// a page key as the server and the export write it (Python's quote(safe="")): ! ' ( ) * encoded too
function enc(p) { return encodeURIComponent(str(p)).replace(/[!'()*]/g, c => "%" + c.charCodeAt(0).toString(16).toUpperCase()); }
function key(...parts) { return parts.map(enc).join("/"); }
const NUMERIC = new Set(["#", "n", "n runs", "n paired", "n dropped", "attempted", "measured", "unmeasured", "coerced",
  "won", "actions", "control rate", "treatment rate", "difference", "b / c", "p", "p adjusted", "p adjusted (family)",
  "95% CI", "MDE", "steps", "skills", "admissible", "step", "lift", "rate (of measured)"]);
function link(route, text) { return `<a href="#/${route}">${esc(text)}</a>`; }
function table(headers, rows, attrs) {
  const head = headers.map(h => `<th class="${NUMERIC.has(h) ? "num" : ""}">${esc(h)}</th>`).join("");
  return `<table ${attrs || ""}><thead><tr>${head}</tr></thead><tbody>${rows.join("")}</tbody></table>`;
}
function td(html, cls, k) { return `<td class="${cls || ""}"${k ? ` data-k="${k}"` : ""}>${html}</td>`; }
function problems(doc) {
  const list = arr(doc.problems);
  if (!list.length) return "";
  return `<div class="problems" id="problems"><b>${list.length} problem${list.length > 1 ? "s" : ""} reading this page:</b><ul>` +
    list.map(p => `<li>${esc(p)}</li>`).join("") + "</ul></div>";
}
function pre(text) { return `<pre>${esc(text)}</pre>`; }
// A plot is drawn after the page's HTML is in place: its slot is an empty div, and plot.js
// builds the SVG into it element by element (labels as text nodes, never as markup).
let plotQueue = [];
function plotSlot(id, build) {
  plotQueue.push([id, build]);
  return `<div class="plot-slot" id="slot-${esc(id)}"></div>`;
}
function drawPlots() {
  const queue = plotQueue;
  plotQueue = [];
  for (const [id, build] of queue) {
    const host = document.getElementById("slot-" + id);
    if (!host) continue;
    try { host.appendChild(build(id)); }
    catch (err) { const p = document.createElement("p"); p.className = "problems"; p.textContent = "could not draw this plot: " + err.message; host.appendChild(p); }
  }
}
function trainingPlots(t, prefix) {
  const tr = obj(t);
  return `<p class="muted">From ${esc(tr.source)}: ${num(tr.steps)} logged steps, up to step ${num(tr.up_to_step)} (the newest saved checkpoint's log; steps after it are not shown until the next save).</p>` +
    arr(tr.panels).map((panel, i) => plotSlot(`${prefix}-training-${i}`, id => Plot.training(obj(panel), id))).join("");
}
function headline(h) {
  const hl = obj(h);
  const arms = arr(hl.arms).map(obj).map(a => `<span class="h-arm" data-label="${esc(a.label)}">${esc(a.label)} ` +
    (a.unmeasured ? `<span class="unmeasured">unmeasured (${esc(a.unmeasured)})</span>` : `${pct(a.rate)} <span class="muted">(${num(a.successes)}/${num(a.n)})</span>`) + "</span>");
  const verdicts = arr(hl.verdicts).map(obj).map(v => `<span class="h-verdict" data-label="${esc(v.treatment)}">${esc(v.treatment)} vs ${esc(v.control)}: <b>${esc(v.verdict || "no verdict")}</b></span>`);
  return arms.length ? arms.join(" · ") + (verdicts.length ? "<br>" + verdicts.join("<br>") : "") : '<span class="muted">no eval recorded</span>';
}
function details(summary, html) { return `<details><summary>${summary}</summary>${html}</details>`; }

// -- a small markdown renderer for SKILL.md (front matter, headings, lists, paragraphs) --------
function markdown(text) {
  let body = str(text), front = "";
  const m = body.match(/^---\n([\s\S]*?)\n---\n?/);
  if (m) { front = m[1]; body = body.slice(m[0].length); }
  let html = front ? `<dl class="kv">${front.split("\n").filter(l => l.includes(":")).map(l => {
    const i = l.indexOf(":"); return `<dt>${esc(l.slice(0, i))}</dt><dd>${esc(l.slice(i + 1).trim())}</dd>`;
  }).join("")}</dl>` : "";
  let list = null;
  const close = () => { if (list) { html += list === "table" ? "</tbody></table>" : `</${list}>`; list = null; } };
  for (const line of body.split("\n")) {
    let mm;
    if (/^\s*\|/.test(line)) {  // a pipe table row; the |---| row only separates the header
      if (/^\s*\|[\s:|-]+\|?\s*$/.test(line)) continue;
      const cells = line.trim().replace(/^\||\|$/g, "").split("|").map(c => esc(c.trim()));
      if (list !== "table") { close(); html += `<table><thead><tr>${cells.map(c => `<th>${c}</th>`).join("")}</tr></thead><tbody>`; list = "table"; }
      else html += `<tr>${cells.map(c => `<td>${c}</td>`).join("")}</tr>`;
    }
    else if ((mm = line.match(/^(#{1,6})\s+(.*)/))) { close(); const n = Math.min(6, mm[1].length + 2); html += `<h${n}>${esc(mm[2])}</h${n}>`; }
    else if ((mm = line.match(/^\s*\d+\.\s+(.*)/))) { if (list !== "ol") { close(); html += "<ol>"; list = "ol"; } html += `<li>${esc(mm[1])}</li>`; }
    else if ((mm = line.match(/^\s*[-*]\s+(.*)/))) { if (list !== "ul") { close(); html += "<ul>"; list = "ul"; } html += `<li>${esc(mm[1])}</li>`; }
    else if (!line.trim()) { close(); }
    else { close(); html += `<p>${esc(line)}</p>`; }
  }
  close();
  return html;
}

// -- a line diff (longest common subsequence; skill files are short) ---------------------------
function diffLines(a, b) {
  const x = str(a).split("\n"), y = str(b).split("\n");
  if (!a) return y.map(l => ["+", l]);
  if (!b) return x.map(l => ["-", l]);
  const n = x.length, m = y.length, L = [];
  for (let i = 0; i <= n; i++) L.push(new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push(["-", x[i++]]);
    else out.push(["+", y[j++]]);
  }
  while (i < n) out.push(["-", x[i++]]);
  while (j < m) out.push(["+", y[j++]]);
  return out;
}
function diffHtml(lines) {
  return `<pre class="diff">${lines.map(([t, l]) =>
    `<span class="${t === "+" ? "add" : t === "-" ? "del" : "ctx"}">${esc(t + " " + l)}</span>`).join("")}</pre>`;
}
function unifiedDiffHtml(text) {  // a diff already made (optimize candidates)
  return `<pre class="diff">${str(text).split("\n").map(l =>
    `<span class="${/^\+(?!\+\+)/.test(l) ? "add" : /^-(?!--)/.test(l) ? "del" : "ctx"}">${esc(l)}</span>`).join("")}</pre>`;
}

// -- loading ----------------------------------------------------------------------------------
function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = src; s.onload = resolve; s.onerror = () => reject(new Error("cannot load " + src));
    document.head.appendChild(s);
  });
}
async function load(docKey) {
  if (!STATIC) {
    const r = await fetch("api/doc?key=" + encodeURIComponent(docKey), {cache: "no-store"});
    if (!r.ok) throw new Error(`HTTP ${r.status} for ${docKey}`);
    return await r.text();
  }
  if (!window.SKILLOS_MANIFEST) await loadScript("data/manifest.js");
  const file = window.SKILLOS_MANIFEST[docKey];
  if (!file) return JSON.stringify({kind: "missing", key: docKey, problems: [`this export has no page ${docKey}`]});
  if (!(docKey in window.SKILLOS_DOCS)) await loadScript(file + ".js");
  return JSON.stringify(window.SKILLOS_DOCS[docKey]);
}

// -- pages --------------------------------------------------------------------------------------
const pages = {};

pages.experiments = (doc) => {
  const s = state.experiments = state.experiments || {evidence: false};
  const goal = doc.goal ? `<p>Project goal: <b>${esc(doc.goal.text)}</b> <span class="muted">(set by ${esc(doc.goal.set_by)})</span></p>`
    : '<p class="muted">No project goal set (a person sets it at their own terminal: skillos ledger goal TEXT).</p>';
  const exps = arr(doc.experiments).filter(e => !s.evidence || e.valid);
  const rows = exps.map(e => `<tr class="${e.valid ? "" : "invalidated"}" data-id="${esc(e.id)}">` +
    td(link(key("experiment", e.id), "#" + e.id)) + td(esc(e.name)) + td(headline(e.headline), "", "headline") + td(esc(e.hypothesis)) +
    td(esc(e.status), "", "status") + td(esc(e.conclusion || "")) +
    td(e.valid ? "" : `<span class="badge invalid">invalidated</span> ${esc(e.invalid_reason)}`, "flag", "flag") +
    td(num(e.n_runs), "num") + td(esc(e.created_at)) + "</tr>");
  const runs = arr(doc.runs).map(r => "<tr>" + td(link(key("run", r.id), r.id)) + td(esc(r.kind)) + td(esc(r.path)) +
    td(r.modified ? utc(r.modified) : "") + "</tr>");
  return `<h1>Experiments</h1>${goal}
    <div class="filters"><label><input type="checkbox" id="evidence" ${s.evidence ? "checked" : ""}> evidence only (hide invalidated)</label>
    <span class="muted">${exps.length} of ${arr(doc.experiments).length} shown · ledger ${esc(doc.ledger)}</span></div>
    ${table(["id", "name", "headline (arm rate (successes/measured), verdict)", "hypothesis", "status", "conclusion", "validity", "n runs", "created"], rows, 'id="experiments"')}
    <h2>Run folders</h2>${arr(doc.runs).length ? table(["run", "kind", "folder", "last change (UTC)"], runs, 'id="runs"') : '<p class="muted">No run folders found.</p>'}`;
};
pages.experiments.bind = () => {
  const box = document.getElementById("evidence");
  if (box) box.onchange = () => { state.experiments.evidence = box.checked; rerender(); };
};

function evalCells(ev) {
  return td(num(ev.n_attempted), "num", "attempted") + td(num(ev.n_measured), "num", "measured") +
    td(num(ev.n_unmeasured), "num", "unmeasured") + td(num(ev.coerced_actions), "num", "coerced") +
    td(num(ev.successes), "num", "won") + td(num(ev.actions), "num", "actions");
}
function comparisonsTable(comps, family, id) {
  const rows = arr(comps).map(c => `<tr data-treatment="${esc(c.treatment)}">` + td(esc(c.treatment)) + td(esc(c.control)) +
    td(num(c.n_paired), "num", "n_paired") + td(num(c.n_dropped), "num", "n_dropped") +
    td(pct(c.control_rate), "num", "control_rate") + td(pct(c.treatment_rate), "num", "treatment_rate") +
    td(pts(c.difference), "num", "difference") + td(`${num(c.b)} / ${num(c.c)}`, "num", "bc") +
    td(pval(c.p_value), "num", "p") + td(pval(c.p_adjusted) + (family ? ` <span class="muted">(${esc(family)})</span>` : ""), "num", "p_adjusted") +
    td(`[${pts(c.ci_low)}, ${pts(c.ci_high)}]`, "num", "ci") + td(pts(c.mde).replace("+", ""), "num", "mde") +
    td(verdictWords(c.verdict), "", "verdict") + td(esc(c.note || "")) + "</tr>");
  return table(["treatment", "control", "n paired", "n dropped", "control rate", "treatment rate", "difference",
    "b / c", "p", "p adjusted (family)", "95% CI", "MDE", "verdict", "note"], rows, `id="${id}"`);
}
function verdictWords(v) {  // evals/stats.py:verdicts, as recorded (or judged again by the server)
  const vd = obj(v), word = str(vd.word);
  if (!word) return '<span class="muted">no verdict</span>';
  const cls = word === "improvement" ? "won" : word === "regression" ? "lost" :
    (word === "not reportable" || word === "attrition") ? "unmeasured" : "";
  return `<b class="${cls}">${esc(vd.label || word)}</b>`;
}
pages.experiment = (doc) => {
  const e = doc.experiment;
  if (!e) return `<h1>Experiment ${esc(doc.id)}</h1>`;
  const flag = e.valid ? "" : `<p><span class="badge invalid" id="invalidated">invalidated</span> ${esc(e.invalid_reason)} — not evidence.</p>`;
  const runs = arr(doc.runs).map(r => {
    const evs = arr(r.evals).length ? arr(r.evals) : [{}];
    return evs.map(ev => `<tr data-run="${esc(r.id)}" data-arm="${esc(ev.arm || r.arm)}">` + td(ident(r.id)) + td(esc(ev.arm || r.arm)) +
      td(esc(r.status)) + evalCells(ev) + td(r.rid ? link(key("run", r.rid), r.rid) : '<span class="muted">missing</span>') +
      td(esc(r.executor_fingerprint), "", "fingerprint") + td(esc(str(r.git_commit).slice(0, 10)) + (r.git_dirty ? " (dirty)" : "")) +
      td(esc(r.started_at) + " → " + esc(r.ended_at || "…")) + "</tr>").join("");
  });
  const configs = arr(doc.runs).map(r => details(`run ${ident(r.id)} (${esc(r.arm)}) config`, pre(JSON.stringify(r.config, null, 1)))).join("");
  const reports = arr(doc.reports).map((rep, i) => `<h3>${link(key("run", rep.rid), rep.rid)}: vs control ${esc(rep.control)}</h3>` +
    reportPlots(obj(rep.plots), rep.sweep, `r${i}`) + comparisonsTable(rep.comparisons, rep.family_correction, "comparisons")).join("");
  const training = arr(doc.training).map((t, i) => `<h3>${link(key("run", obj(t).rid), obj(t).rid)}</h3>` + trainingPlots(t, `t${i}`)).join("");
  const gates = arr(doc.gate_results).map(g => `<tr class="${g.status === "FAIL" ? "lost" : ""}">` + td(num(g.gate)) + td(esc(g.check_name)) +
    td(esc(g.status), "", "status") + td(esc(g.config_key)) + td(esc(g.seen)) + td(esc(g.expected)) + "</tr>");
  const overrides = arr(doc.overrides).map(o => "<tr>" + td(num(o.gate)) + td(esc(o.check_name)) + td(esc(o.reason)) + td(esc(o.actor)) + td(esc(o.created_at)) + "</tr>");
  const counts = {};
  arr(doc.gate_results).forEach(g => { counts[str(g.status)] = (counts[str(g.status)] || 0) + 1; });
  return `<h1>Experiment #${esc(e.id)} ${esc(e.name)}</h1>${flag}
    <dl class="kv"><dt>hypothesis</dt><dd>${esc(e.hypothesis)}</dd><dt>success metric</dt><dd>${esc(e.success_metric)}</dd>
    <dt>status</dt><dd id="status">${esc(e.status)}</dd><dt>conclusions</dt><dd id="conclusions">${arr(e.conclusions).map(c => `<p class="muted">by ${esc(c.by)} at ${esc(c.at)}</p>` + pre(c.text)).join("") || esc(e.conclusion || "(none)")}</dd>
    <dt>config hash</dt><dd>${esc(e.config_hash)}</dd></dl>
    <h2>Arms and runs</h2><p class="muted">attempted = measured + unmeasured; an unmeasured game is not a failure. coerced = actions replaced because they were not admissible.</p>
    ${table(["run", "arm", "status", "attempted", "measured", "unmeasured", "coerced", "won", "actions", "folder", "executor fingerprint", "commit", "time"], runs, 'id="runs"')}
    ${configs}
    ${arr(doc.canaries).length ? "<h2>Learning canary</h2>" + arr(doc.canaries).map(canaryView).join("") : ""}
    <h2>Comparisons</h2>${reports || (arr(doc.canaries).length ? '<p class="muted">A canary writes no report.json: its verdicts are above.</p>' : '<p class="muted">No report.json (the run has not finished).</p>')}
    ${training ? `<h2>Training: reward, its components and health per step</h2>${training}` : ""}
    ${arr(doc.candidates).length ? "<h2>Optimize candidates</h2>" + candidatesTable(arr(doc.candidates)) : ""}
    <h2>Gate results</h2><p class="muted">${Object.entries(counts).map(([k, v]) => `${esc(k)} ${v}`).join(" · ")}</p>
    ${table(["gate", "check", "status", "config key", "seen", "expected"], gates, 'id="gates"')}
    <h2>Overrides</h2>${overrides.length ? table(["gate", "check", "reason", "by", "when"], overrides, 'id="overrides"') : '<p class="muted">None.</p>'}
    <h2>Failures linked</h2>${failuresTable(doc.failures)}
    ${doc.postmortem ? details("postmortem (generated from the ledger)", pre(doc.postmortem)) : ""}`;
};

function canaryView(c) {
  c = obj(c);
  const rate = x => isNum(x) ? pct(x) : other(x);
  const control = (name, x) => { x = obj(x); return "<tr>" + td(esc(name)) + td(rate(x.after)) + td(num(x.b) + "/" + num(x.c)) +
    td(num(x.p, 3)) + td(esc(x.verdict)) + "</tr>"; };
  const controls = [control("shuffled control", c.control)].concat(Object.entries(obj(c.controls)).map(([k, x]) =>
    control(k === "flipped" ? "sign-flipped control" : k, x)));
  const seeds = arr(c.seeds).map(x => { x = obj(x); return "<tr>" + td(num(x.seed)) + td(rate(x.before) + " → " + rate(x.after)) +
    td(num(x.b) + "/" + num(x.c)) + td(num(x.p, 3)) + td(esc(x.direction), "", "direction") + td(esc(x.verdict)) + "</tr>"; });
  const held = obj(c.held_out), rule = obj(c.rule);
  return `<h3 id="canary-${esc(c.id)}">canary #${esc(c.id)} ${esc(c.trainer)}: <span class="${c.passed ? "won" : "lost"}">${c.passed ? "PASS" : "FAIL"}</span></h3>
    <dl class="kv"><dt>metric</dt><dd>${esc(c.metric)}</dd>
    <dt>pooled</dt><dd>${rate(c.before)} → ${rate(c.after)} on ${num(c.n)} held-out tasks, b/c ${num(c.b)}/${num(c.c)}, p ${num(c.p, 3)}` +
    `${isNum(c.p_corrected) ? ", corrected " + num(c.p_corrected, 3) : ""}: ${esc(c.verdict)}</dd>
    <dt>held-out</dt><dd>${esc(held.split)} split (env seed ${esc(held.env_seed)}), look ${held.looks === null || held.looks === undefined ? "uncounted" : num(held.looks)}${c.quick ? "; --quick: vouches for nothing" : ""}</dd>
    <dt>rule (declared first)</dt><dd>${esc(rule.text)}</dd><dt>code</dt><dd>${esc(c.code_hash)}</dd></dl>
    ${table(["seed", "before → after", "b/c", "p", "direction", "verdict"], seeds, 'class="canary-seeds"')}
    ${table(["control", "after", "b/c", "p", "verdict"], controls, 'class="canary-controls"')}`;
}

function candidatesTable(cands) {
  const rows = arr(cands).map((c, i) => {
    const edits = Array.isArray(c.edits) ? c.edits.map(str).join("; ") : (() => { try { return arr(JSON.parse(c.edits)).map(str).join("; "); } catch (e) { return str(c.edits); } })();
    const signed = x => isNum(x) ? (x >= 0 ? "+" : "") + x.toFixed(3) : other(x);
    const arith = c.mean_difference === null || c.mean_difference === undefined ? "too little measured" :
      `mean ${signed(c.mean_difference)} ${isNum(c.mean_difference) && isNum(c.threshold) ? (c.mean_difference > c.threshold ? ">" : "≤") : "vs"} threshold ${signed(c.threshold)}` +
      (c.se !== null && c.se !== undefined ? ` (SE ${fixed(c.se, 3)})` : "");
    return `<tr data-candidate="${i + 1}" class="${c.valid === false ? "invalidated" : ""}">` + td(num(c.candidate || i + 1)) + td(num(c.epoch)) + td(num(c.step)) + td(esc(edits)) +
      td(`<b class="${c.verdict === "accept" ? "won" : c.verdict === "reject" ? "lost" : "unmeasured"}">${esc(c.verdict)}</b>`, "", "verdict") +
      td(esc(c.mode)) + td(arith, "", "arith") + td(`${pct(c.incumbent_rate)} → ${pct(c.candidate_rate)}`) +
      td(`${num(c.n_paired)} / ${num(c.n_tasks)}, ${num(c.n_unmeasured)} unmeasured`, "", "n") +
      td(details("diff", unifiedDiffHtml(c.diff)) + (c.reason ? `<div class="muted">${esc(c.reason)}</div>` : "")) + "</tr>";
  });
  return table(["#", "epoch", "step", "edits", "verdict", "gate", "mean diff vs threshold", "incumbent → candidate", "paired / tasks", "diff and reason"], rows, 'id="candidates"');
}
function failuresTable(list) {
  if (!list || !list.length) return '<p class="muted">None.</p>';
  const rows = arr(list).map(f => `<tr class="${f.valid ? "" : "invalidated"}">` + td(ident(f.id)) + td(esc(f.status)) + td(esc(f.category)) +
    td(esc(f.kind)) + td(esc(arr(f.modes).map(str).join(", "))) + td(esc(f.what)) + td(esc(f.detected_by)) + td(esc(f.gate || "")) +
    td(f.valid ? "" : `<span class="badge invalid">${esc(f.invalid_reason)}</span>`, "flag") + "</tr>");
  return table(["id", "status", "category", "kind", "modes", "what", "detected by", "gate", "validity"], rows, 'id="failures"');
}

function armCounts(rows) {
  const arms = {};
  for (const r of arr(rows)) {
    const k = JSON.stringify([str(r.arm), str(r.phase)]);
    const a = arms[k] = arms[k] || {arm: r.arm, phase: r.phase, attempted: 0, measured: 0, unmeasured: 0, coerced: 0, won: 0};
    a.attempted++;
    const m = rowMean(r);  // a game of trials counts its mean over measured trials
    if (m === null) a.unmeasured++; else { a.measured++; a.won += m; }
    a.coerced += isNum(r.coerced_actions) ? r.coerced_actions : 0;
  }
  return Object.values(arms);
}
function reportPlots(p, sweep, prefix) {
  const plots = obj(p);
  return (arr(plots.arms).length ? plotSlot(`${prefix}-arms`, id => Plot.arms(plots.arms, id)) : "") +
    (arr(plots.forest).length ? plotSlot(`${prefix}-forest`, id => Plot.forest(plots.forest, id)) : "") +
    (sweep && typeof sweep === "object" ? plotSlot(`${prefix}-sweep`, id => Plot.sweep(sweep, id)) : "");
}
function optimizeReport(r) {
  const arms = ["seed", "best"].filter(a => r[a] && typeof r[a] === "object").map(a => `<tr data-arm="${a}">` + td(a) + td(num(r[a].attempted), "num", "attempted") +
    td(num(r[a].measured), "num", "measured") + td(num(r[a].unmeasured), "num", "unmeasured") + td(num(r[a].coerced_actions), "num", "coerced") +
    td(num(r[a].successes), "num", "won") + td(pct(r[a].success_rate), "num", "rate") + "</tr>");
  const cal = obj(r.calibration);
  return `<h2>Optimize report (the sealed test, read once)</h2>
    <dl class="kv" id="optimize-report"><dt>verdict</dt><dd>${esc(r.verdict)}</dd><dt>candidates tried</dt><dd>${num(r.candidates_tried)}, ${num(r.accepted)} accepted</dd>
    <dt>gate</dt><dd>${esc(r.gate)}</dd><dt>A/A calibration</dt><dd>${esc(cal.verdict)}: ${esc(cal.reason)}</dd>
    <dt>p corrected for candidates tried</dt><dd>${pval(r.p_corrected)}</dd></dl>
    ${table(["arm", "attempted", "measured", "unmeasured", "coerced", "won", "rate"], arms, 'id="optimize-arms"')}
    ${r.comparison ? comparisonsTable([r.comparison], null, "optimize-comparison") : ""}
    ${details("report.json", pre(JSON.stringify(r, null, 1)))}`;
}
pages.run = (doc) => {
  const s = state["run:" + doc.id] = state["run:" + doc.id] || {arm: "", phase: "", task_type: "", outcome: "", reason: ""};
  const traced = new Set(arr(doc.traced));
  const rowsOf = arr(doc.rows);
  const counts = armCounts(rowsOf).map(a => `<tr data-arm="${esc(a.arm)}" data-phase="${esc(a.phase)}">` + td(esc(a.arm)) + td(esc(a.phase)) +
    td(num(a.attempted), "num", "attempted") + td(num(a.measured), "num", "measured") + td(num(a.unmeasured), "num", "unmeasured") +
    td(num(a.coerced), "num", "coerced") + td(num(a.won, 4), "num", "won") + td(a.measured ? pct(a.won / a.measured) : NA, "num", "rate") + "</tr>");
  const opts = (name, values) => `<label>${name} <select id="f-${name.replace(" ", "_")}"><option value="">all</option>` +
    [...new Set(values.map(str))].sort().map(v => `<option ${s[name.replace(" ", "_")] === v ? "selected" : ""}>${esc(v)}</option>`).join("") + "</select></label>";
  const shown = rowsOf.filter(r => (!s.arm || str(r.arm) === s.arm) && (!s.phase || str(r.phase) === s.phase) &&
    (!s.task_type || str(r.task_type) === s.task_type) &&
    (!s.outcome || s.outcome === outcomeWord(r)) &&
    (!s.reason || String(r.unmeasured_reason || "").toLowerCase().includes(s.reason.toLowerCase())));
  const games = shown.map(r => `<tr data-game="${esc(r.game_id)}" data-arm="${esc(r.arm)}">` +
    td(link(key("game", doc.id, r.arm, r.phase, r.game_id), r.game_id) + (traced.has(key(r.arm, r.phase, r.game_id)) ? "" : ' <span class="muted">(no trajectory)</span>')) +
    td(esc(r.arm)) + td(esc(r.phase)) + td(esc(r.task_type)) + td(esc(r.task)) + td(rowOutcome(r), "", "outcome") +
    td(num(r.steps), "num") + td(num(r.coerced_actions), "num") + td(num(arr(r.skills_retrieved).length), "num") +
    td(esc(r.unmeasured_reason || "")) + "</tr>");
  const plots = obj(doc.plots);
  const rep = doc.report && Array.isArray(doc.report.comparisons) ? `<h2>Comparisons (report.json)</h2>${reportPlots({arms: plots.arms, forest: plots.forest}, null, "run")}${comparisonsTable(doc.report.comparisons, doc.report.family_correction, "comparisons")}` : "";
  const training = doc.training ? `<h2>Training: reward, its components and health per step</h2>${trainingPlots(doc.training, "run")}` : "";
  const sweep = doc.sweep && typeof doc.sweep === "object" ? `<h2>Sweep: success per checkpoint</h2>${plots.sweep ? plotSlot("run-sweep", id => Plot.sweep(obj(plots.sweep), id)) : ""}
    ${table(["repo", "step", "treatment rate", "control rate", "lift", "95% CI", "p", "p adjusted", "MDE", "n paired", "n dropped", "verdict"],
      arr(doc.sweep.rows).map(r => `<tr data-step="${esc(r.step)}">` + td(esc(r.repo)) + td(num(r.step), "num") + td(pct(r.treatment_rate), "num") + td(pct(r.control_rate), "num") +
        td(pts(r.difference), "num", "difference") + td(`[${pts(r.ci_low)}, ${pts(r.ci_high)}]`, "num", "ci") + td(pval(r.p_value), "num") + td(pval(r.p_adjusted), "num") +
        td(pts(r.mde).replace("+", ""), "num") + td(num(r.n_paired), "num") + td(num(r.n_dropped), "num") + td(verdictWords(r.verdict), "", "verdict") + "</tr>"), 'id="sweep"')}
    ` : "";
  const history = arr(doc.history).length ? `<h2>Optimize candidates (history.jsonl)</h2>${candidatesTable(arr(doc.history))}` : "";
  const optimize = doc.report && doc.report.verdict ? optimizeReport(doc.report) : "";
  const repos = arr(doc.learning_arms).map(a => link(key("repo", doc.id, a), `skill repo of ${str(a)}`)).join(" · ");
  const ledgerRuns = arr(doc.ledger_runs).map(r => link(key("experiment", r.experiment_id), `run #${str(r.id)} (experiment #${str(r.experiment_id)}, ${str(r.status)})`)).join(" · ");
  return `<h1>Run ${esc(doc.id)}</h1><p class="muted">${esc(doc.path)}</p>
    <p>${ledgerRuns || '<span class="muted">no ledger run names this folder</span>'}</p><p>${repos}</p>
    ${counts.length ? `<h2>Arms (counted from the rows so far)</h2>
    ${table(["arm", "phase", "attempted", "measured", "unmeasured", "coerced", "won", "rate (of measured)"], counts, 'id="arms"')}` : ""}
    ${rep}${sweep}${training}${history}${optimize}
    ${rowsOf.length ? `<h2>Games</h2><div class="filters">${opts("arm", rowsOf.map(r => r.arm))}${opts("phase", rowsOf.map(r => r.phase))}
      ${opts("task type", rowsOf.map(r => r.task_type))}${opts("outcome", ["won", "lost", "mixed", "unmeasured"])}
      <label>unmeasured reason <input id="f-reason" value="${esc(s.reason)}" placeholder="contains…"></label>
      <span class="muted" id="shown">${shown.length} of ${rowsOf.length} games</span></div>
    ${table(["game", "arm", "phase", "task type", "task", "outcome", "steps", "coerced", "skills", "unmeasured reason"], games, 'id="games"')}` : ""}`;
};
pages.run.bind = (doc) => {
  const s = state["run:" + doc.id];
  for (const name of ["arm", "phase", "task_type", "outcome"]) {
    const el = document.getElementById("f-" + name);
    if (el) el.onchange = () => { s[name] = el.value; rerender(); };
  }
  const reason = document.getElementById("f-reason");
  if (reason) reason.onchange = () => { s.reason = reason.value; rerender(); };
};

pages.game = (doc) => {
  const t = obj(doc.trace), r = obj(doc.row);
  const success = doc.trace ? t.success : r.success;
  const retrieved = (t.retrieved ? arr(t.retrieved) : arr(r.skills_retrieved).map(n => ({skill: n, score: null}))).map(obj);
  const skills = retrieved.length ? `<ol id="retrieved">${retrieved.map(h => `<li><b>${esc(h.skill)}</b> <span class="muted">score</span> <span class="score">${h.score === null || h.score === undefined ? "n/a" : fixed(h.score, 3)}</span></li>`).join("")}</ol>`
    : '<p class="muted" id="retrieved">No skills retrieved.</p>';
  const steps = arr(t.steps).map(obj).map((st, i) => `<tr class="${st.coerced ? "coerced" : ""}">` + td(i + 1, "num") +
    td(esc(st.action) + (st.coerced ? ` <span class="badge unmeasured">coerced</span> <span class="muted">executor typed: ${esc(st.proposed)}</span>` : "")) +
    td(esc(st.observation)) + td(num(st.admissible), "num", "admissible") + "</tr>");
  const ops = arr(t.curation).map(obj).map(o => "<tr>" + td(esc(o.op)) + td(esc(o.skill)) + td(o.markdown ? details("SKILL.md after", `<div class="skill">${markdown(str(o.markdown))}</div>`) : "") + "</tr>");
  const learning = doc.phase === "train" || arr(t.curation).length;
  return `<h1>Game ${esc(doc.game_id)}</h1><p>${link(key("run", doc.run), "run " + doc.run)} · arm <b>${esc(doc.arm)}</b> · ${esc(doc.phase)} games</p>
    <dl class="kv"><dt>task</dt><dd id="task">${esc(t.task || r.task)}</dd><dt>task type</dt><dd>${esc(t.task_type || r.task_type)}</dd>
    <dt>outcome</dt><dd id="outcome">${Array.isArray(r.trials) ? rowOutcome(r) + ' <span class="muted">(the steps below: its first trial)</span>' : outcome(success)}</dd>
    ${(t.unmeasured_reason || r.unmeasured_reason) ? `<dt>unmeasured reason</dt><dd>${esc(t.unmeasured_reason || r.unmeasured_reason)}</dd>` : ""}
    <dt>steps</dt><dd>${num(r.steps !== undefined ? r.steps : arr(t.steps).length)}, ${num(r.coerced_actions)} coerced</dd><dt>repo size</dt><dd>${num(r.repo_size)}</dd></dl>
    <h2>Skills retrieved</h2>${skills}
    ${t.intro ? `<h2>Intro</h2>${pre(t.intro)}` : ""}
    <h2>Steps</h2>${steps.length ? table(["#", "action", "observation", "admissible"], steps, 'id="steps"') : '<p class="muted">No steps recorded.</p>'}
    ${learning || ops.length ? `<h2>Curator operations after this game</h2>${ops.length ? table(["op", "skill", "result"], ops, 'id="curation"') : '<p class="muted">None.</p>'}` : ""}`;
};

function snapshots(events) {  // repo after each game, replayed from the curator's operations
  const snaps = [{label: "empty", skills: {}}];  // skills: name -> markdown (Object.fromEntries: no prototype keys)
  let cur = new Map();
  for (const e of arr(events).map(obj)) {
    cur = new Map(cur);
    for (const o of arr(e.ops).map(obj)) { if (o.markdown === null || o.op === "delete") cur.delete(str(o.skill)); else cur.set(str(o.skill), str(o.markdown)); }
    snaps.push({label: `after ${str(e.phase)} ${str(e.game_id)}`, skills: Object.fromEntries(cur), ops: arr(e.ops)});
  }
  return snaps;
}
pages.repo = (doc) => {
  const events = arr(doc.events), final = obj(doc.final);
  const snaps = snapshots(events);
  if (!events.length) snaps.push({label: "on disk now", skills: final});
  const s = state["repo:" + doc.run + doc.arm] = state["repo:" + doc.run + doc.arm] || {};
  const at = Math.min(s.at === undefined ? snaps.length - 1 : s.at, snaps.length - 1);
  const from = Math.min(s.from === undefined ? Math.max(0, at - 1) : s.from, snaps.length - 1);
  const select = (id, v) => `<select id="${id}">${snaps.map((sn, i) => `<option value="${i}" ${i === v ? "selected" : ""}>${i}: ${esc(sn.label)} (${Object.keys(sn.skills).length} skills)</option>`).join("")}</select>`;
  const A = snaps[from].skills, Bs = snaps[at].skills;
  const changed = [...new Set([...Object.keys(A), ...Object.keys(Bs)])].sort().filter(n => A[n] !== Bs[n]);
  const diffs = changed.map(n => `<h3>${esc(n)} <span class="muted">${!A[n] ? "added" : !Bs[n] ? "deleted" : "changed"}</span></h3>${diffHtml(diffLines(str(A[n]), str(Bs[n])))}`).join("");
  const skills = Object.keys(Bs).sort().map(n => details(esc(n), `<div class="skill">${markdown(str(Bs[n]))}</div>`)).join("");
  const last = snaps[snaps.length - 1].skills;
  const drift = events.length && Object.keys(final).length &&
    (Object.keys(final).length !== Object.keys(last).length || Object.keys(final).some(n => str(final[n]).trim() !== str(last[n]).trim()))
    ? '<p class="problems">The repo on disk differs from the replayed history (edited by hand, or a run in progress).</p>' : "";
  return `<h1>Skill repo of ${esc(doc.arm)}</h1><p>${link(key("run", doc.run), "run " + str(doc.run))} · ${events.length} games curated · ${Object.keys(final).length} skills on disk now</p>${drift}
    <div class="filters"><label>snapshot ${select("at", at)}</label><label>diff from ${select("from", from)}</label></div>
    <div class="cols"><div><h2>Diff: ${changed.length} skills changed</h2><div id="diff">${diffs || '<p class="muted">No change.</p>'}</div></div>
    <div><h2 id="snapshot-size">${Object.keys(Bs).length} skills at snapshot ${at}</h2>${skills}</div></div>`;
};
pages.repo.bind = (doc) => {
  const s = state["repo:" + doc.run + doc.arm];
  const at = document.getElementById("at"), from = document.getElementById("from");
  if (at) at.onchange = () => { s.at = +at.value; s.from = Math.max(0, s.at - 1); rerender(); };
  if (from) from.onchange = () => { s.from = +from.value; rerender(); };
};

pages.failures = (doc) => {
  const st = obj(doc.stats);
  const counter = (o, id) => Object.keys(obj(o)).length ? table(["", "n"], Object.entries(obj(o)).map(([k, v]) => `<tr data-name="${esc(k)}">` + td(esc(k)) + td(num(v), "num", "n") + "</tr>"), `id="${id}"`) : '<p class="muted">None.</p>';
  const fixes = arr(doc.fixes).map(f => "<tr>" + td(ident(f.id)) + td(ident(f.failure_id)) + td(esc(f.description)) + td(esc(f.metric)) + td(esc(f.direction)) +
    td(num(f.expected_size)) + td(f.before_run_id ? ident(f.before_run_id) : "") + td(f.after_run_id ? ident(f.after_run_id) : "") +
    td(`<b class="${f.verdict === "verified" ? "won" : f.verdict ? "lost" : "muted"}">${esc(f.verdict || "not verified yet")}</b>`, "", "verdict") + td(esc(f.detail || "")) + "</tr>");
  return `<h1>Failures</h1><p>${num(st.failures)} valid failures, ${num(st.retracted_or_invalid)} retracted or invalid;
    documented ${num(obj(st.documented).n)} of ${num(obj(st.documented).of)}.</p>
    <div class="cols"><div><h2>By category</h2>${counter(st.by_category, "by-category")}</div><div><h2>By mode</h2>${counter(st.by_mode, "by-mode")}</div>
    <div><h2>By status</h2>${counter(st.by_status, "by-status")}</div></div>
    <h2>All failures</h2>${failuresTable(doc.failures)}
    <h2>Fixes and their verification</h2>${fixes.length ? table(["fix", "failure", "description", "metric", "direction", "expected", "before", "after", "verdict", "detail"], fixes, 'id="fixes"') : '<p class="muted">None.</p>'}
    ${doc.postmortem ? `<h2>Postmortem (whole ledger)</h2>${pre(doc.postmortem)}` : ""}`;
};

// -- routing --------------------------------------------------------------------------------------
let current = {key: null, text: null, doc: null};
function route() {
  const parts = (location.hash.replace(/^#\/?/, "") || "experiments").split("/");
  return parts.map(decodeURIComponent);
}
function docKeyOf(parts) { return parts.length === 1 && parts[0] === "" ? "experiments" : key(...parts); }
function rerender() {
  const doc = current.doc, app = document.getElementById("app");
  const page = Object.prototype.hasOwnProperty.call(pages, doc.kind) ? pages[doc.kind] : null;
  let html;
  plotQueue = [];
  try {
    html = problems(doc) + (page ? page(doc) : `<h1>${esc(doc.kind === "missing" ? "No such page" : "Error")}</h1>`);
  } catch (err) {
    html = problems({problems: [...(doc.problems || []), "the page could not draw this document: " + err.message]}) + pre(JSON.stringify(doc, null, 1));
  }
  app.innerHTML = html;
  drawPlots();
  if (page && page.bind) page.bind(doc);
  document.body.dataset.ready = current.key;
  document.body.dataset.renders = String(+(document.body.dataset.renders || 0) + 1);
}
async function show(poll) {
  const docKey = docKeyOf(route());
  let text;
  try {
    text = await load(docKey);
  } catch (err) {
    text = JSON.stringify({kind: "error", key: docKey, problems: ["could not load this page: " + err.message]});
  }
  if (docKeyOf(route()) !== docKey) return;  // the page changed while this loaded
  if (poll && docKey === current.key && text === current.text) return;  // nothing was appended
  current = {key: docKey, text: text, doc: JSON.parse(text)};
  rerender();
}
window.addEventListener("hashchange", () => show(false));
document.getElementById("mode").textContent = STATIC ? "static export" : `live · refreshes every ${POLL_MS / 1000} s`;
show(false);
if (!STATIC) setInterval(() => { if (!document.hidden) show(true); }, POLL_MS);
