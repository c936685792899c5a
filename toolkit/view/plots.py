"""The numbers every plot draws, computed here so the page only draws them (static/plot.js) and
`skillos export report` writes the same numbers as CSV.

Intervals come from evals/stats.py (Wilson per arm, the comparison's own bootstrap CI and MDE),
verdict words from `stats.verdicts` only: a report written before comparisons carried their
verdict is judged again here, in the report's own family. A value that was not measured is
None with a reason (`unmeasured`), which the page writes instead of drawing a 0.

Every input came from a file anyone could have written: a count that is not a count, a rate
that is not a number, becomes unmeasured with its reason, never an exception.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

from skillos.evals import stats

# What the training plot draws from a trainer_state.json log_history entry: TRL's own reward,
# KL and entropy, and the reward components and health numbers skillos logs beside them
# (training/common/grpo.py:step_metrics), by panel.
TRAINING_PANELS = (("reward", ("reward",), ("reward/",)),
                   ("reward health", (), ("health/",)),
                   ("policy", ("kl", "entropy"), ()))
TRAINER_STATE = "trainer_state.json"


def number(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def count(x) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) and x >= 0 else None


def step(x) -> int | float | None:
    """A step as logged: a whole number stays one (the CSV says 10, not 10.0)."""
    return count(x) if count(x) is not None else number(x)


def text(x) -> str:
    return "" if x is None else str(x)


def arm_point(name, summary) -> dict:
    """One arm's success rate with its 95% Wilson interval and its denominators."""
    s = summary if isinstance(summary, dict) else {}
    k, n, attempted = count(s.get("successes")), count(s.get("measured")), count(s.get("attempted"))
    point = {"label": text(name), "successes": k, "n": n, "attempted": attempted,
             "unmeasured_games": count(s.get("unmeasured")), "rate": None, "lo": None, "hi": None,
             "unmeasured": None}
    if s.get("successes") is None and count(s.get("trials")) is not None:  # several trials a game: a mean
        point["rate"], point["trials"] = number(s.get("mean_score")), count(s.get("trials"))
        if point["rate"] is None or n is None:
            point["rate"], point["unmeasured"] = None, "no game measured"
    elif n is None or k is None or k > n:
        point["unmeasured"] = "its counts are not counts (successes of measured)"
    elif n == 0:
        reasons = "; ".join(text(r) for r in s.get("unmeasured_reasons") or [] if r) if isinstance(
            s.get("unmeasured_reasons"), list) else ""
        point["unmeasured"] = "no game measured" + (f": {reasons}" if reasons else "")
    else:
        point["rate"] = k / n
        point["lo"], point["hi"] = stats.rate_ci(k, n)
    return point


def arm_points(arms) -> list[dict]:
    return [arm_point(name, summary) for name, summary in (arms.items() if isinstance(arms, dict) else [])]


COUNTS = ("b", "c", "n_paired", "attempted", "control_unmeasured", "treatment_unmeasured")  # of stats.JUDGED_FIELDS


def with_verdicts(comparisons, family: str) -> list[dict]:
    """The comparisons, each with its `verdict` (from stats.verdicts): the one recorded, else
    judged here over these comparisons as one family (Holm), as the report that wrote them did."""
    comps = [dict(c) for c in comparisons if isinstance(c, dict)] if isinstance(comparisons, list) else []
    missing = [i for i, c in enumerate(comps) if not isinstance(c.get("verdict"), dict)]
    if not missing:
        return comps
    alphas = [number(c.get("alpha")) for c in comps]
    alpha = next((a for a in alphas if a is not None), 0.05)
    members = {}
    for i, c in enumerate(comps):
        p, diff = number(c.get("p_value")), number(c.get("difference"))
        judged = {f: (count if f in COUNTS else number)(c.get(f)) for f in stats.JUDGED_FIELDS}
        members[i] = SimpleNamespace(**{**judged, "difference": diff if p is not None else None},
                                     note=text(c.get("note")) or None,
                                     treatment=text(c.get("treatment")), control=text(c.get("control")))
    decided = stats.verdicts(members, alpha=alpha, family=family, correction="holm")
    for i in missing:
        comps[i]["verdict"] = {**decided[i].to_dict(), "recomputed": True}
    return comps


def forest_row(c: dict) -> dict:
    verdict = c.get("verdict") if isinstance(c.get("verdict"), dict) else {}
    row = {"label": text(c.get("treatment")), "control": text(c.get("control")),
           "effect": number(c.get("difference")), "lo": number(c.get("ci_low")), "hi": number(c.get("ci_high")),
           "mde": number(c.get("mde")), "n_paired": count(c.get("n_paired")), "n_dropped": count(c.get("n_dropped")),
           "b": count(c.get("b")), "c": count(c.get("c")), "control_rate": number(c.get("control_rate")),
           "treatment_rate": number(c.get("treatment_rate")), "p_value": number(c.get("p_value")),
           "p_adjusted": number(c.get("p_adjusted")), "verdict": text(verdict.get("label") or verdict.get("word")),
           "word": text(verdict.get("word")), "family": text(verdict.get("family")),
           "correction": text(verdict.get("correction")), "unmeasured": None}
    if row["effect"] is None:
        row["unmeasured"] = text(c.get("note")) or "no game was measured in both arms"
    elif row["lo"] is None or row["hi"] is None:
        row["unmeasured"] = "no confidence interval recorded"
    return row


def report_plots(report, rid: str) -> dict:
    """The comparisons of one eval report (report.json) with their verdicts, its per-arm rates,
    and its forest."""
    if not isinstance(report, dict) or not isinstance(report.get("comparisons"), list):
        return {}
    family = report.get("family", {}).get("name") if isinstance(report.get("family"), dict) else None
    comps = with_verdicts(report["comparisons"], text(family) or f"{rid}: arms vs {text(report.get('control'))}")
    return {"comparisons": comps, "arms": arm_points(report.get("arms")), "forest": [forest_row(c) for c in comps]}


def sweep_plot(sweep, report) -> dict | None:
    """A checkpoint sweep: each repo's success rate (Wilson CI) by step, the control's rate as a
    band, each point's verdict, and the selection caveat (best of n on the games scored)."""
    if not isinstance(sweep, dict) or not isinstance(sweep.get("rows"), list):
        return None
    arms = report.get("arms") if isinstance(report, dict) and isinstance(report.get("arms"), dict) else {}
    points = []
    for r in sweep["rows"]:
        if not isinstance(r, dict):
            continue
        name = text(r.get("repo"))
        arm = next((arms[a] for a in (f"curator:{name}", f"repo:{name}") if a in arms), None)
        point = arm_point(name, arm) if arm is not None else {
            **arm_point(name, {}), "unmeasured": "its arm is not in report.json"}
        verdict = r.get("verdict") if isinstance(r.get("verdict"), dict) else {}
        point.update(step=step(r.get("step")), difference=number(r.get("difference")),
                     ci_low=number(r.get("ci_low")), ci_high=number(r.get("ci_high")), mde=number(r.get("mde")),
                     p_adjusted=number(r.get("p_adjusted")), n_paired=count(r.get("n_paired")),
                     n_dropped=count(r.get("n_dropped")), verdict=text(verdict.get("label") or verdict.get("word")))
        if point["step"] is None and point["unmeasured"] is None:
            point["unmeasured"] = "no checkpoint step recorded"
        points.append(point)
    control = text(report.get("control")) if isinstance(report, dict) else ""
    return {"points": points, "control": arm_point(control, arms.get(control)) if control in arms else
            {**arm_point(control, {}), "unmeasured": "the control is not in report.json"},
            "caveat": text(sweep.get("caveat")), "best": text(sweep.get("best")),
            "last_is_best": sweep.get("last_is_best") is True}


def trainer_states(folder: Path) -> list[Path]:
    """The trainer_state.json of every saved checkpoint of a training output folder (and its
    archive), newest step first."""
    def saved_at(path: Path) -> int:
        try:
            return int(path.parent.name.rsplit("-", 1)[1])
        except (IndexError, ValueError):
            return -1
    found = list(folder.glob(f"checkpoint-*/{TRAINER_STATE}")) + list(folder.glob(f"archive/checkpoint-*/{TRAINER_STATE}"))
    return sorted(found, key=lambda p: (saved_at(p), "archive" not in p.parts), reverse=True)


def training_plot(state, source: str) -> dict:
    """Reward, its components, the reward-health numbers, KL and entropy per step, from the
    newest checkpoint's log_history (what TRL and skillos logged each step). A series logged at
    no step is listed as unmeasured; a step without a value leaves a gap, never a 0."""
    history = state.get("log_history") if isinstance(state, dict) else None
    history = [h for h in history if isinstance(h, dict) and number(h.get("step")) is not None] \
        if isinstance(history, list) else []
    def drawn(key: str) -> bool:
        return any(key in exact or (prefixes and key.startswith(prefixes)) for _, exact, prefixes in TRAINING_PANELS)

    history = [h for h in history if any(drawn(k) for k in h)]  # not the run's closing summary
    logged = sorted({k for h in history for k in h if drawn(k)})
    panels = []
    for title, exact, prefixes in TRAINING_PANELS:
        names = [k for k in exact if k in logged] + [k for k in logged if prefixes and k.startswith(prefixes)]
        series, unmeasured = [], []
        for name in names:
            points = [{"x": step(h["step"]), "y": number(h.get(name))} for h in history]
            if any(p["y"] is not None for p in points):
                series.append({"label": name, "points": points})
            else:
                unmeasured.append(name)
        missing = None if series else (
            f"this run's log has no {' / '.join(list(exact) + [p + '*' for p in prefixes])} values"
            if not unmeasured else "logged, but never a number")
        panels.append({"title": title, "series": series, "unmeasured_series": unmeasured, "unmeasured": missing})
    steps = [step(h["step"]) for h in history]
    return {"source": source, "steps": len(set(steps)), "up_to_step": max(steps) if steps else None,
            "panels": panels}


def headline(reports: list[dict], evals: list[dict]) -> dict:
    """An experiment's headline for the index: each arm's rate with its denominator and each
    comparison's verdict words, from its reports; from the ledger's evals (rates only) when no
    report was written yet."""
    arms, verdicts = [], []
    for rep in reports:
        arms += [{k: a[k] for k in ("label", "successes", "n", "rate", "unmeasured")} for a in rep.get("arms", [])]
        verdicts += [{"treatment": f["label"], "control": f["control"], "verdict": f["verdict"],
                      "effect": f["effect"]} for f in rep.get("forest", [])]
    if not arms:
        for ev in evals:
            point = arm_point(ev.get("arm"), {"successes": ev.get("successes"), "measured": ev.get("n_measured")})
            arms.append({k: point[k] for k in ("label", "successes", "n", "rate", "unmeasured")})
    return {"arms": arms, "verdicts": verdicts, "from": "report" if reports else "ledger" if arms else None}
