// skillos export report: the page of report.html, drawn from its inline JSON block with plot.js.
// Built element by element with text nodes (no markup from data); every table lists the
// denominators, and the same rows are in the CSV files beside this page.
"use strict";

(() => {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const app = document.getElementById("app");
  app.textContent = "";
  const fin = x => typeof x === "number" && isFinite(x);
  const s = x => x === null || x === undefined ? "" : String(x);
  const pct = x => fin(x) ? (100 * x).toFixed(1) + "%" : "n/a";
  const pts = x => fin(x) ? (x >= 0 ? "+" : "") + (100 * x).toFixed(1) + " pts" : "n/a";
  const p3 = x => fin(x) ? x.toPrecision(3) : "n/a";
  const ci = (lo, hi, f) => fin(lo) && fin(hi) ? `[${f(lo)}, ${f(hi)}]` : "n/a";
  function node(parent, tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = s(text);
    if (cls) e.className = cls;
    parent.appendChild(e);
    return e;
  }
  function table(parent, id, headers, rows) {
    const t = node(parent, "table");
    t.id = id;
    const head = node(node(t, "thead"), "tr");
    headers.forEach(h => node(head, "th", h));
    const body = node(t, "tbody");
    for (const row of rows) { const tr = node(body, "tr"); row.forEach(v => node(tr, "td", v)); }
  }
  const arr = x => Array.isArray(x) ? x : [];

  node(app, "h1", "skillos report: " + s(data.title));
  if (data.hypothesis) node(app, "p", "Hypothesis: " + s(data.hypothesis));
  if (data.valid === false) node(app, "p", "Invalidated: " + s(data.invalid_reason) + " (not evidence).", "problems");
  node(app, "p", "Verdict words come from evals/stats.py (improvement / can't tell yet / not detected / regression / attrition / not reportable); " +
    "a difference below the MDE is not evidence of no effect. An unmeasured value is written as unmeasured, never drawn as 0.", "muted");
  if (arr(data.problems).length) {
    const box = node(app, "div", undefined, "problems");
    node(box, "b", `${data.problems.length} problem(s) reading the records:`);
    const ul = node(box, "ul");
    data.problems.forEach(p => node(ul, "li", p));
  }
  arr(data.reports).forEach((rep, i) => {
    const plots = rep.plots || {};
    node(app, "h2", `Run ${s(rep.rid)}: arms vs control ${s(rep.control)}`);
    if (arr(plots.arms).length) app.appendChild(Plot.arms(plots.arms, `r${i}-arms`));
    table(app, `r${i}-arms-table`, ["arm", "attempted", "measured", "successes", "rate", "95% CI (Wilson)"],
      arr(plots.arms).map(a => [a.label, a.attempted, a.n, a.successes, a.unmeasured ? `unmeasured (${s(a.unmeasured)})` : pct(a.rate), ci(a.lo, a.hi, pct)]));
    if (arr(plots.forest).length) app.appendChild(Plot.forest(plots.forest, `r${i}-forest`));
    table(app, `r${i}-comparisons-table`, ["treatment", "control", "n paired", "n dropped", "b / c", "difference", "95% CI", "MDE", "p", "p adjusted", "verdict"],
      arr(plots.forest).map(f => [f.label, f.control, f.n_paired, f.n_dropped, `${s(f.b)} / ${s(f.c)}`,
        f.unmeasured ? `unmeasured (${s(f.unmeasured)})` : pts(f.effect), ci(f.lo, f.hi, pts), fin(f.mde) ? pts(f.mde).replace("+", "") : "n/a",
        p3(f.p_value), `${p3(f.p_adjusted)} (${s(f.correction)})`, f.verdict]));
    if (rep.sweep) {
      node(app, "h3", "Checkpoint sweep");
      app.appendChild(Plot.sweep(rep.sweep, `r${i}-sweep`));
    }
  });
  arr(data.training).forEach((t, i) => {
    node(app, "h2", `Training run ${s(t.rid)}: reward, its components and health per step`);
    node(app, "p", `From ${s(t.source)}: ${s(t.steps)} logged steps, up to step ${s(t.up_to_step)}.`, "muted");
    arr(t.panels).forEach((panel, k) => app.appendChild(Plot.training(panel, `t${i}-training-${k}`)));
  });
  document.body.dataset.ready = "report";
})();
