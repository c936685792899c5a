"""The runs of one experiment (`matrix:` x `experiment.seeds`, expanded by config.expand) judged
together: every arm-vs-control comparison of every run is one member of one family, corrected by
`stats.verdicts` over all of them (not run by run); the seeds of each matrix point say whether
they agree, and their effects are pooled with a CI across seeds."""

from __future__ import annotations

import json

from skillos.evals import stats
from skillos.errors import SkillosError
from skillos.evals.conclusion import best_arm
from skillos.files import write_atomic
from skillos.safety import read_json_file

FIELDS = set(stats.Comparison.__dataclass_fields__)
FAMILY = "family.json"  # OUT/family.json: the runs a matrix's family holds once a result is in


def family_members(out) -> list[str]:
    """The run labels a matrix folder's family already holds: family.json, else the runs of a
    matrix.json written before family.json existed; [] for a folder with no result yet."""
    from pathlib import Path

    for name, key in ((FAMILY, "members"), ("matrix.json", "runs")):
        path = Path(out) / name
        if path.is_file():
            data = read_json_file(path, name)
            items = data.get(key) if isinstance(data, dict) else None
            if isinstance(items, list):
                return [i["label"] if isinstance(i, dict) else i for i in items
                        if isinstance(i, str) or (isinstance(i, dict) and isinstance(i.get("label"), str))]
    return []


def guard_family(out, runs: list, overwrite: bool = False) -> None:
    """A family is fixed when its first result is recorded, and can only grow: a rerun into a
    matrix folder whose family holds a run this config lacks is refused before any game (Holm over
    fewer comparisons than were run, chosen after seeing them, is not a correction). `overwrite`
    (a person replacing the folder's results) starts a new family."""
    from pathlib import Path

    if overwrite:
        for name in (FAMILY, "matrix.json"):
            (Path(out) / name).unlink(missing_ok=True)
        return
    labels = {r.label for r in runs}
    lost = [label for label in family_members(out) if label not in labels]
    if lost:
        raise SkillosError(f"{out}: its family already holds {len(family_members(out))} runs with results, and this "
                           f"config drops {len(lost)} of them ({', '.join(lost[:3])}{', ...' if len(lost) > 3 else ''}): "
                           "a family only grows once results are in; rerun the matrix as it was (more seeds or "
                           "values may be added), or choose a new --out")


def record_family(out, runs: list) -> None:
    """The family after a run's result is in: every run of this config, with those it held."""
    from pathlib import Path

    members = list(dict.fromkeys(family_members(out) + [r.label for r in runs]))
    write_atomic(Path(out) / FAMILY, json.dumps({"members": members}, indent=1) + "\n")


def summarize(cfg, runs: list, results: dict, outputs: dict) -> dict:
    """`runs`: config.expand(cfg); `results`: {label: eval report}; `outputs`: {label: folder}."""
    comparisons, meta = {}, {}
    for run in runs:
        for c in results[run.label]["comparisons"]:
            key = f"{run.label}: {c['treatment']} vs {c['control']}"
            comparisons[key] = stats.Comparison(**{k: v for k, v in c.items() if k in FIELDS})
            meta[key] = {"run": run.label, "values": run.values, "seed": run.seed, "arm": c["treatment"],
                         "control": c["control"]}
    name = f"{cfg.experiment.name}: every arm of {len(runs)} runs vs {cfg.eval.control.arm}"
    decided = stats.verdicts(comparisons, alpha=cfg.eval.alpha, family=name, correction="holm",
                             worthwhile=cfg.experiment.expected_effect)
    rows = []
    for key, comp in comparisons.items():
        rows.append({**meta[key], "treatment_rate": comp.treatment_rate, "control_rate": comp.control_rate,
                     "difference": comp.difference, "b": comp.b, "c": comp.c, "n_paired": comp.n_paired,
                     "n_dropped": comp.n_dropped, "p_value": comp.p_value, "verdict": decided[key].to_dict()})
    return {"experiment": cfg.experiment.name, "config_hash": cfg.hash(),
            "family": {"name": name, "size": len(rows), "correction": "holm"},
            "runs": [{"label": r.label, "values": r.values, "seed": r.seed, "output": str(outputs[r.label])}
                     for r in runs],
            "rows": rows, "points": points(rows, cfg.eval.alpha)}


def points(rows: list, alpha: float) -> list:
    """Per matrix point and arm, across its seeds: each seed's effect and verdict, whether the
    verdicts agree, and the pooled effect with a CI across seeds."""
    groups: dict = {}
    for row in rows:
        groups.setdefault((json.dumps(row["values"], sort_keys=True), row["arm"]), []).append(row)
    out = []
    for (_, arm), members in groups.items():
        words = {m["seed"]: m["verdict"]["word"] for m in members}  # agreement is on the verdict's word
        measured = [m["difference"] for m in members if m["difference"] is not None]
        out.append({"values": members[0]["values"], "arm": arm, "control": members[0]["control"],
                    "seeds": [m["seed"] for m in members],
                    "per_seed": [{"seed": m["seed"], "difference": m["difference"], "verdict": m["verdict"]["word"],
                                  "label": m["verdict"]["label"]}
                                 for m in members],
                    "agree": len(set(words.values())) == 1, "pooled": stats.mean_ci(measured, alpha, bounds=(-1.0, 1.0)),
                    "n_unmeasured_seeds": len(members) - len(measured)})
    return out


def peaks(runs: list, results: dict) -> dict:
    """A sweep's runs: each run's best repo or checkpoint (highest success, as the sweep picked it)
    and its step, and how many steps the peaks of the runs spread."""
    per_run = []
    for run in runs:
        sweep = results[run.label].get("sweep") or {}
        best = next((r for r in sweep.get("rows", []) if r["repo"] == sweep.get("best")), None)
        per_run.append({"run": run.label, "seed": run.seed, "best": best and best["repo"],
                        "step": best and best["step"], "difference": best and best["difference"]})
    steps = [p["step"] for p in per_run if p["step"] is not None]
    return {"per_run": per_run, "spread_steps": max(steps) - min(steps) if len(steps) > 1 else None,
            "spread_reason": None if len(steps) > 1 else f"{len(steps)} run(s) with a measured best: no spread"}


def conclusion(summary: dict) -> str:
    """The matrix's conclusion, one line per fact: every member's verdict line as the verdict
    function words it, the family and its size, the best row with its best-of-n caveat, and for
    each matrix point which seeds agree and which disagree, with the pooled effect."""
    family = summary["family"]
    lines = [f"{r['run']}: {r['arm']} vs {r['control']}: {r['verdict']['line']}" for r in summary["rows"]]
    lines.append(f"family: {family['name']}, {family['size']} comparison(s), corrected with {family['correction']}")
    best, caveat = best_arm(summary["rows"])
    if best is not None:
        lines.append(f"best arm: {best['arm']} in {best['run']} ({best['treatment_rate']:.1%} vs "
                     f"{best['control_rate']:.1%}; verdict {best['verdict']['label']}); {caveat}")
    for p in summary["points"]:
        where = ", ".join(f"{k}={v}" for k, v in p["values"].items()) or "the config"
        by_word: dict = {}
        for s in p["per_seed"]:
            by_word.setdefault(s["verdict"], []).append(str(s["seed"]))
        seeds = "; ".join(f"{word}: seed {', '.join(ss)}" for word, ss in by_word.items())
        pooled = p["pooled"]
        effect = (f"pooled {100 * pooled['mean']:+.1f} pts over {pooled['n']} seed(s)" if pooled["mean"] is not None
                  else "pooled: none measured")
        if pooled["ci_low"] is not None:
            effect += f", {pooled['confidence']:.0%} CI across seeds [{100 * pooled['ci_low']:+.1f}, {100 * pooled['ci_high']:+.1f}]"
        elif pooled["note"]:
            effect += f" ({pooled['note']})"
        lines.append(f"seeds at {where}, {p['arm']}: {'agree' if p['agree'] else 'disagree'} ({seeds}); {effect}")
    if summary.get("peaks"):
        found = summary["peaks"]
        each = ", ".join(f"{p['run']}: {p['best']} (step {p['step']})" if p["best"] else f"{p['run']}: none measured"
                         for p in found["per_run"])
        spread = (f"spread {found['spread_steps']} steps" if found["spread_steps"] is not None
                  else found["spread_reason"])
        lines.append(f"peak per run: {each}; {spread}")
    return "\n".join(lines)
