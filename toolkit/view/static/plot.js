// skillos plots: inline SVG built element by element (no library, no build step, no network).
// Every number drawn was computed by the server (skillos/view/plots.py: Wilson intervals, the
// comparisons' CIs and MDEs, the verdict words of evals/stats.py); this file only draws them.
// Every label is set as a text node or an attribute value, never parsed as markup. Each drawn
// point carries what it was drawn from (data-label, data-x, data-y, data-lo, data-hi) so a test
// can check the picture against its JSON; a value that was not measured is not drawn: its row
// says "unmeasured (reason)" instead.
"use strict";

const Plot = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = ["#2458a6", "#c4572a", "#1f7a3a", "#7b3fa0", "#8a5a00", "#0f7c84", "#b3261e", "#555"];
  const fin = x => typeof x === "number" && isFinite(x);
  const s = x => x === null || x === undefined ? "" : typeof x === "object" ? JSON.stringify(x) : String(x);
  function el(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = s(text);
    return e;
  }
  function add(parent, tag, attrs, text) { const e = el(tag, attrs, text); parent.appendChild(e); return e; }
  function short(text, n) { const t = s(text); return t.length > n ? t.slice(0, n - 1) + "…" : t; }
  function niceTicks(lo, hi, n) {
    const span = hi - lo || 1, raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(st => span / st <= n) || 10 * mag;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toFixed(12));
    return out;
  }
  function domain(values, pad, fixed) {
    const vs = values.filter(fin);
    let lo = fixed ? fixed[0] : Math.min(...vs), hi = fixed ? fixed[1] : Math.max(...vs);
    if (!vs.length && !fixed) { lo = 0; hi = 1; }
    if (fixed) { lo = Math.min(lo, ...vs); hi = Math.max(hi, ...vs); }
    if (hi === lo) { lo -= 0.5; hi += 0.5; }
    const p = fixed ? 0 : (hi - lo) * pad;
    return [lo - p, hi + p];
  }
  function svgRoot(id, w, h, label) {
    return el("svg", {id: id, class: "plot", width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img", "aria-label": label});
  }
  function pointAttrs(p, extra) {
    return Object.assign({"data-label": s(p.label), "data-x": fin(p.x) ? p.x : null, "data-y": fin(p.y) ? p.y : null,
      "data-lo": fin(p.lo) ? p.lo : null, "data-hi": fin(p.hi) ? p.hi : null}, extra || {});
  }
  function whisker(g, x1, x2, y, color, vertical) {  // a CI: a line with end caps
    if (vertical) {
      add(g, "line", {x1: y, x2: y, y1: x1, y2: x2, stroke: color});
      for (const v of [x1, x2]) add(g, "line", {x1: y - 4, x2: y + 4, y1: v, y2: v, stroke: color});
    } else {
      add(g, "line", {x1: x1, x2: x2, y1: y, y2: y, stroke: color});
      for (const v of [x1, x2]) add(g, "line", {x1: v, x2: v, y1: y - 4, y2: y + 4, stroke: color});
    }
  }

  // Rows of point + interval on one horizontal axis (per-arm rates, a forest of comparisons).
  // spec: {id, title, axis, fixed: [lo, hi] | null, zero: bool, pct: bool, rows: [{label, x, lo, hi,
  // band: [lo, hi] | null, right: text, unmeasured: reason | null, attrs: {data-*}}]}
  function intervals(spec) {
    const rows = spec.rows || [], L = 230, R = 230, T = 26, RH = 26, W = 800, H = T + RH * Math.max(1, rows.length) + 34;
    const vals = rows.flatMap(r => [r.x, r.lo, r.hi].concat(r.band || [])).concat(spec.zero ? [0] : []);
    const [lo, hi] = domain(vals, 0.08, spec.fixed);
    const X = v => L + (W - L - R) * (v - lo) / (hi - lo);
    const svg = svgRoot(spec.id, W, H, spec.title);
    add(svg, "text", {x: L, y: 14, class: "title"}, spec.title);
    const fmt = v => spec.pct ? (100 * v).toFixed(0) + (spec.pct === "pts" ? "" : "%") : s(v);
    for (const t of niceTicks(lo, hi, 6)) {
      add(svg, "line", {x1: X(t), x2: X(t), y1: T, y2: H - 30, stroke: "#e3e6ea"});
      add(svg, "text", {x: X(t), y: H - 16, "text-anchor": "middle"}, fmt(t));
    }
    add(svg, "text", {x: L + (W - L - R) / 2, y: H - 3, "text-anchor": "middle"}, spec.axis);
    if (spec.zero && lo <= 0 && hi >= 0) add(svg, "line", {x1: X(0), x2: X(0), y1: T, y2: H - 30, stroke: "#888"});
    rows.forEach((r, i) => {
      const y = T + RH * i + RH / 2, g = add(svg, "g", {class: "row", "data-label": s(r.label)});
      const name = add(g, "text", {x: L - 8, y: y + 4, "text-anchor": "end", class: "label"}, short(r.label, 36));
      add(name, "title", {}, r.label);
      if (r.band && fin(r.band[0]) && fin(r.band[1]))
        add(g, "rect", Object.assign({class: "band", x: X(r.band[0]), width: X(r.band[1]) - X(r.band[0]), y: y - RH / 2 + 3,
          height: RH - 6, fill: "#dde6f3"}, {"data-label": s(r.label), "data-lo": r.band[0], "data-hi": r.band[1]}));
      if (r.unmeasured || !fin(r.x)) {
        const why = `unmeasured (${s(r.unmeasured || "no value")})`;
        add(add(g, "text", {x: L + 4, y: y + 4, class: "unmeasured", "data-label": s(r.label)}, short(why, 52)), "title", {}, why);
      } else {
        if (fin(r.lo) && fin(r.hi)) whisker(g, X(r.lo), X(r.hi), y, COLORS[0], false);
        const c = add(g, "circle", pointAttrs(r, Object.assign({class: "point", cx: X(r.x), cy: y, r: 4.5, fill: COLORS[0]}, r.attrs)));
        add(c, "title", {}, `${s(r.label)}: ${fmt(r.x)} [${fmt(r.lo)}, ${fmt(r.hi)}]`);
      }
      if (r.right) add(g, "text", {x: W - R + 10, y: y + 4, class: "verdict", "data-label": s(r.label)}, short(r.right, 36));
    });
    return svg;
  }

  // Series of points over a numeric x (a sweep over checkpoint steps, training curves per step);
  // a null y breaks the line (a gap, never a 0). spec: {id, title, xaxis, yaxis, fixed, pct,
  // band: {lo, hi, y, label} | null, series: [{label, points: [{x, y, lo, hi, label, attrs}]}]}
  function lines(spec) {
    const series = spec.series || [], W = 640, L = 58, R = 16, T = 30 + 14 * (series.length > 1 ? Math.ceil(series.length / 3) : 0), B = 38;
    const H = T + 210 + B, pts = series.flatMap(se => se.points || []), band = spec.band;
    const [x0, x1] = domain(pts.map(p => p.x), 0.04, null);
    const [y0, y1] = domain(pts.flatMap(p => [p.y, p.lo, p.hi]).concat(band ? [band.lo, band.hi] : []), 0.08, spec.fixed);
    const X = v => L + (W - L - R) * (v - x0) / (x1 - x0), Y = v => T + (H - T - B) * (y1 - v) / (y1 - y0);
    const fmt = v => spec.pct ? (100 * v).toFixed(0) + "%" : Math.abs(v) >= 1000 ? v.toExponential(1) : String(+v.toPrecision(3));
    const svg = svgRoot(spec.id, W, H, spec.title);
    add(svg, "text", {x: L, y: 14, class: "title"}, spec.title);
    for (const t of niceTicks(y0, y1, 5)) {
      add(svg, "line", {x1: L, x2: W - R, y1: Y(t), y2: Y(t), stroke: "#e3e6ea"});
      add(svg, "text", {x: L - 6, y: Y(t) + 4, "text-anchor": "end"}, fmt(t));
    }
    const whole = pts.every(p => !fin(p.x) || Number.isInteger(p.x));  // steps: no tick at 2.5
    for (const t of niceTicks(x0, x1, 8).filter(t => !whole || Number.isInteger(t))) add(svg, "text", {x: X(t), y: H - B + 15, "text-anchor": "middle"}, String(t));
    add(svg, "text", {x: L + (W - L - R) / 2, y: H - 4, "text-anchor": "middle"}, spec.xaxis);
    add(svg, "text", {x: 12, y: T + (H - T - B) / 2, transform: `rotate(-90 12 ${T + (H - T - B) / 2})`, "text-anchor": "middle"}, spec.yaxis);
    if (band && fin(band.lo) && fin(band.hi)) {
      const g = add(svg, "g", {class: "control"});
      add(g, "rect", {class: "band", x: L, width: W - L - R, y: Y(band.hi), height: Math.max(1, Y(band.lo) - Y(band.hi)), fill: "#ece7dd",
        "data-label": s(band.label), "data-lo": band.lo, "data-hi": band.hi, "data-y": fin(band.y) ? band.y : null});
      if (fin(band.y)) add(g, "line", {x1: L, x2: W - R, y1: Y(band.y), y2: Y(band.y), stroke: "#8a5a00", "stroke-dasharray": "4 3"});
      add(g, "text", {x: W - R - 4, y: Y(band.hi) - 4, "text-anchor": "end"}, short(band.label, 60));
    }
    series.forEach((se, k) => {
      const color = COLORS[k % COLORS.length], g = add(svg, "g", {class: "series", "data-series": s(se.label)});
      if (series.length > 1) {
        const lx = L + 190 * (k % 3), ly = 34 + 14 * Math.floor(k / 3);
        add(g, "rect", {x: lx, y: ly - 8, width: 10, height: 3, fill: color});
        add(g, "text", {x: lx + 14, y: ly - 3, class: "legend"}, short(se.label, 28));
      }
      let path = "", open = false;
      for (const p of se.points || []) {
        if (!fin(p.x) || !fin(p.y)) { open = false; continue; }
        path += (open ? "L" : "M") + X(p.x).toFixed(1) + " " + Y(p.y).toFixed(1);
        open = true;
      }
      if (path) add(g, "path", {d: path, fill: "none", stroke: color, "stroke-opacity": 0.7});
      for (const p of se.points || []) {
        if (!fin(p.x) || !fin(p.y)) continue;
        if (fin(p.lo) && fin(p.hi)) whisker(g, Y(p.lo), Y(p.hi), X(p.x), color, true);
        const c = add(g, "circle", pointAttrs(p, Object.assign({class: "point", "data-series": s(se.label), cx: X(p.x), cy: Y(p.y),
          r: pts.length > 60 ? 2 : 3.5, fill: color}, p.attrs)));
        add(c, "title", {}, `${s(p.label || se.label)}: ${fmt(p.y)} at ${s(p.x)}`);
      }
    });
    return svg;
  }

  // -- the skillos plots, from the documents' `plots` (skillos/view/plots.py) ------------------
  const arr = x => Array.isArray(x) ? x : [];
  const pct1 = v => fin(v) ? (100 * v).toFixed(1) + "%" : "n/a";
  function arms(points, id) {
    return intervals({id: id, title: "Success rate per arm (95% Wilson CI; successes / measured games)", axis: "success rate",
      fixed: [0, 1], pct: true, rows: arr(points).map(p => ({label: p.label, x: p.rate, lo: p.lo, hi: p.hi, unmeasured: p.unmeasured,
        right: `${s(p.successes)} / ${s(p.n)} measured`, attrs: {"data-n": p.n, "data-successes": p.successes}}))});
  }
  function forest(rows, id) {
    return intervals({id: id, title: "Difference in success vs the control (95% CI); shaded: ± MDE", axis: "difference (points)",
      zero: true, pct: "pts", rows: arr(rows).map(r => ({label: `${s(r.label)} vs ${s(r.control)}`, x: r.effect, lo: r.lo, hi: r.hi,
        band: fin(r.mde) ? [-r.mde, r.mde] : null, unmeasured: r.unmeasured, right: r.verdict || "no verdict",
        attrs: {"data-mde": r.mde, "data-n": r.n_paired}}))});
  }
  // a plot with lines of text beside or under it (caveats, what was not measured), as text nodes
  function box(svg, notes, cls) {
    const div = document.createElement("div");
    div.className = "plotbox " + (cls || "");
    if (svg) div.appendChild(svg);
    const side = document.createElement("div");
    side.className = "notes";
    for (const [c, t] of notes) { const p = document.createElement("p"); p.className = c; p.textContent = t; side.appendChild(p); }
    if (notes.length) div.appendChild(side);
    return div;
  }
  function sweep(sw, id) {
    const points = arr(sw.points), c = sw.control || {};
    const shown = points.filter(p => !p.unmeasured && fin(p.step) && fin(p.rate));
    const svg = lines({id: id, title: "Checkpoint sweep: success rate per checkpoint (95% Wilson CI)", xaxis: "checkpoint step",
      yaxis: "success rate", fixed: [0, 1], pct: true,
      band: c.unmeasured ? null : {lo: c.lo, hi: c.hi, y: c.rate, label: `control ${s(c.label)}: ${pct1(c.rate)} (${s(c.successes)}/${s(c.n)}), 95% CI`},
      series: [{label: "checkpoints", points: shown.map(p => ({x: p.step, y: p.rate, lo: p.lo, hi: p.hi, label: p.label,
        attrs: {"data-step": p.step, "data-n": p.n, "data-successes": p.successes, "data-verdict": s(p.verdict)}}))}]});
    const notes = [["caveat", `Best: ${s(sw.best) || "none measured"}. Caveat: ${s(sw.caveat)}.`]];
    if (sw.last_is_best === false && shown.length > 1) notes.push(["muted", "The last checkpoint is not the best one."]);
    for (const p of shown) notes.push(["verdict", `${s(p.label)} (step ${s(p.step)}): ${pct1(p.rate)} (${s(p.successes)}/${s(p.n)}), ${s(p.verdict) || "no verdict"}`]);
    if (c.unmeasured) notes.push(["unmeasured", `control ${s(c.label)}: unmeasured (${s(c.unmeasured)})`]);
    for (const p of points.filter(p => !shown.includes(p))) notes.push(["unmeasured", `${s(p.label)}: unmeasured (${s(p.unmeasured || "no rate")})`]);
    return box(svg, notes, "beside");
  }
  function training(panel, id) {
    const notes = arr(panel.unmeasured_series).map(n => ["unmeasured", `${s(n)}: unmeasured (logged, but never a number)`]);
    if (panel.unmeasured) return box(null, [["unmeasured", `${s(panel.title)}: unmeasured (${s(panel.unmeasured)})`]].concat(notes));
    return box(lines({id: id, title: `${s(panel.title)} per step`, xaxis: "step", yaxis: s(panel.title),
      series: arr(panel.series).map(se => ({label: se.label, points: arr(se.points).map(p => ({x: p.x, y: p.y}))}))}), notes);
  }
  return {el, intervals, lines, arms, forest, sweep, training};
})();
