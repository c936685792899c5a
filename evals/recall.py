"""Recall that reaches everything an experiment left (`skillos ledger experiments show`): its
runs and evals, each checkpoint a training run archived with the training metrics logged at its
step and the sweep results it got (in any experiment that swept it), and which runs were imported.

Every join that cannot be made says why (None + reason), never an empty-looking number."""

from __future__ import annotations

import json
from pathlib import Path

from skillos import safety
from skillos.errors import SkillosError
from skillos.evals.run_folder import REPORT

TRAINER_STATE = "trainer_state.json"  # written by transformers beside every checkpoint: its log_history


def experiment_detail(ledger, experiment_id: int) -> dict:
    """`ledger.experiment(id)` with `checkpoints` joined to their metrics and sweeps, and each run's
    `imported` (its source files and hashes, or None)."""
    with ledger.snapshot():
        exp = ledger.experiment(experiment_id)
        run_ids = [r["id"] for r in exp["runs"]]
        marks = ",".join("?" * len(run_ids))
        checkpoints = [dict(r) for r in ledger.db.execute(
            f"SELECT * FROM checkpoints WHERE run_id IN ({marks}) ORDER BY step, id", run_ids)] if run_ids else []
        swept = _sweep_arms(ledger) if checkpoints else {}
    for run in exp["runs"]:
        config = _json(run.get("config_json"))
        run["imported"] = config.get("imported") if isinstance(config.get("imported"), dict) else None
    for ckpt in checkpoints:
        ckpt["training_metrics"], ckpt["training_metrics_reason"] = training_metrics(Path(ckpt["path"]), ckpt["step"])
        ckpt["sweeps"] = [_sweep_result(ledger, run, arm) for run, arm in swept.get(_key(ckpt["path"]), [])]
    exp["checkpoints"] = checkpoints
    exp["peaks"] = peaks(exp["runs"], checkpoints)
    return exp


def peaks(runs: list, checkpoints: list) -> dict:
    """Each training run's peak checkpoint (the swept one with the largest lift over its control,
    newest sweep) and how far the peaks of the runs (seeds) spread: the reference's replicates
    each peaked somewhere else. A run none of whose checkpoints was swept is counted, not guessed."""
    seeds = {r["id"]: r["seed"] for r in runs}
    by_run: dict = {}
    for ckpt in checkpoints:
        by_run.setdefault(ckpt["run_id"], [])
        lifts = [s for s in ckpt["sweeps"] if s.get("difference") is not None]
        if lifts:
            by_run[ckpt["run_id"]].append((lifts[-1]["difference"], ckpt["step"], lifts[-1]["verdict"]))
    per_run = [{"run_id": run, "seed": seeds.get(run), "step": max(found)[1], "difference": max(found)[0],
                "verdict": max(found)[2]} for run, found in by_run.items() if found]
    steps = [p["step"] for p in per_run if p["step"] is not None]
    return {"per_run": per_run, "runs_not_swept": [run for run, found in by_run.items() if not found],
            "spread_steps": max(steps) - min(steps) if len(steps) > 1 else None,
            "spread_reason": None if len(steps) > 1 else f"{len(steps)} run(s) with a swept checkpoint: no spread"}


def training_metrics(folder: Path, step: int | None) -> tuple[dict | None, str | None]:
    """What the trainer logged at the checkpoint's step (merged log_history entries), or None and why."""
    try:
        state = safety.read_json_file(folder / TRAINER_STATE, "trainer state")
    except SkillosError as exc:
        return None, str(exc)
    logged = [entry for entry in state.get("log_history") or [] if isinstance(entry, dict) and entry.get("step") == step]
    if not logged:
        return None, f"{folder / TRAINER_STATE}: nothing logged at step {step}"
    merged: dict = {}
    for entry in logged:
        merged.update(entry)
    return merged, None


def _sweep_arms(ledger) -> dict:
    """{checkpoint folder: [(run row, arm)]}: every `curator:NAME` run of a sweep, by the folder it evaluated."""
    out: dict = {}
    for row in ledger.db.execute("SELECT r.*, a.name AS arm FROM runs r JOIN arms a ON a.id = r.arm_id "
                                 "WHERE a.name LIKE 'curator:%' ORDER BY r.id"):
        curators = (_json(row["config_json"]).get("eval") or {}).get("curators") or {}
        folder = curators.get(row["arm"].split(":", 1)[1])
        if folder:
            out.setdefault(_key(folder), []).append((dict(row), row["arm"]))
    return out


def _sweep_result(ledger, run: dict, arm: str) -> dict:
    """One sweep's result for a checkpoint: its eval's counts and the verdict its report gave."""
    experiment = ledger.row("experiments", run["experiment_id"])["name"] if run["experiment_id"] else None
    ev = ledger.db.execute("SELECT * FROM evals WHERE run_id = ? ORDER BY id DESC LIMIT 1", (run["id"],)).fetchone()
    out = {"run_id": run["id"], "experiment_id": run["experiment_id"], "experiment": experiment, "arm": arm,
           "status": run["status"], "successes": ev["successes"] if ev else None,
           "n_measured": ev["n_measured"] if ev else None, "n_attempted": ev["n_attempted"] if ev else None,
           "verdict": None, "verdict_reason": None}
    output = _json(run["config_json"]).get("output")
    if not output:
        out["verdict_reason"] = "the run records no output folder"
        return out
    try:
        report = safety.read_json_file(Path(output) / REPORT, "eval report")
    except SkillosError as exc:
        out["verdict_reason"] = str(exc)
        return out
    found = [c for c in report.get("comparisons") or [] if isinstance(c, dict) and c.get("treatment") == arm]
    if not found or not isinstance(found[0].get("verdict"), dict):
        out["verdict_reason"] = f"{Path(output) / REPORT}: no verdict for {arm}"
        return out
    verdict = found[0]["verdict"]
    out.update(verdict=verdict.get("label"), verdict_line=verdict.get("line"), p_adjusted=verdict.get("p_adjusted"),
               difference=found[0].get("difference"))
    return out


def _key(path: str) -> str:
    return str(Path(path).expanduser().resolve())


def _json(text) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
