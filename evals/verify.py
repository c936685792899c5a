"""Gate 6, "if a fix doesn't move the number, the diagnosis was wrong": compare the run before
a fix with a run after it, paired on the same games, with the one statistics module, over the
metric the fix named (its success rate, its rate of coerced actions, its rate of unmeasured
games), with that metric's denominators: a fix for coercion is judged by coercion, not success.

A fix is verified only when the number moved in the direction it promised and the paired test
calls it significant; otherwise its failure is reopened with the numbers that say why.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from skillos.evals import stats
from skillos.evals.records import row_outcome
from skillos.ledger.store import Ledger, LedgerError

from skillos.ledger.taxonomy import MEASURED_METRICS as METRICS  # noqa: E402 - one list, the ledger's
from skillos import safety
from skillos.errors import SkillosError
from skillos.evals.records import read_game_rows


# What each measured metric is on one game's row, and how two runs of it are compared: a 0/1
# outcome (McNemar) or a number (the sign test). None: the game does not count for that metric.
PER_GAME = {
    "success_rate": (row_outcome, stats.compare_units),  # a unit's trials or scores too
    "unmeasured_rate": (lambda r: bool(r.get("unmeasured", r.get("success") is None)), stats.compare),
    "coercion_rate": (lambda r: None if r.get("unmeasured", r.get("success") is None) or not r.get("steps")
                      else (r.get("coerced_actions") or 0) / r["steps"], stats.compare_values),
}


def run_outcomes(ledger: Ledger, run_id: int, metric: str = "success_rate") -> dict:
    """game id -> the metric's value on each of a run's held-out games (None: not measured)."""
    value, _ = PER_GAME[metric]
    return {game: value(r) for game, r in run_rows(ledger, run_id).items()}


def run_rows(ledger: Ledger, run_id: int) -> dict:
    """game id -> the JSONL row of each of a run's held-out games, from its recorded file;
    refuses a file that changed since the ledger recorded its hash."""
    run = ledger.run(run_id)
    evals = [e for e in run["evals"] if e["valid"]]
    if not evals:
        raise LedgerError(f"run #{run_id} has no valid eval recorded")
    ev = evals[-1]
    path = Path(ev["jsonl_path"] or "")
    if not path.is_file():
        raise LedgerError(f"run #{run_id}: per-game file {path} is missing")

    try:
        with safety.open_regular(path, "per-game file") as fh:
            digest = hashlib.sha256()
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        if ev["jsonl_sha256"] and digest.hexdigest() != ev["jsonl_sha256"]:
            raise LedgerError(f"run #{run_id}: {path} changed since it was recorded (sha256 differs)")
        rows = read_game_rows(path, trials=True)
    except LedgerError:
        raise
    except SkillosError as exc:
        raise LedgerError(f"run #{run_id}: {exc}") from None
    return {r["game_id"]: r for r in rows
            if r.get("arm") == (ev["arm"] or run["arm"]) and r.get("phase", "eval") == "eval"}


def _begun_after(ledger: Ledger, fix_id: int, fix: dict, after_run_id: int) -> None:
    """A fix is verified only by a run begun after it was recorded (the ledger's timestamps, to
    the second): a run from before, such as another arm of the same experiment, ran without it."""
    run = ledger.run(after_run_id)
    if after_run_id == fix["before_run_id"]:
        raise LedgerError(f"fix #{fix_id}: run #{after_run_id} is its run before; verify it with a run after the fix")
    if run["started_at"] < fix["created_at"]:
        raise LedgerError(f"fix #{fix_id}: run #{after_run_id} began at {run['started_at']}, before the fix was "
                          f"recorded at {fix['created_at']}: it ran without the fix; verify with a run begun after it")


def verify_fix(ledger: Ledger, fix_id: int, after_run_id: int, *, alpha: float, power: float,
               n_boot: int) -> dict:
    """The run after a fix (begun after the fix was recorded) vs the run before it; the verdict
    words are `stats.verdicts`'s, in a family of one (this fix's own test)."""
    fix = ledger.fix(fix_id)
    if fix["metric"] not in METRICS:
        raise LedgerError(f"fix #{fix_id}: metric {fix['metric']!r} cannot be verified; "
                          f"measured metrics: {', '.join(METRICS)}")
    if fix["before_run_id"] is None:
        raise LedgerError(f"fix #{fix_id} names no run before it (--before)")
    _begun_after(ledger, fix_id, fix, after_run_id)
    metric = fix["metric"]  # the number the failure named, not success by default
    before = run_outcomes(ledger, fix["before_run_id"], metric)
    after = run_outcomes(ledger, after_run_id, metric)
    comp = PER_GAME[metric][1](before, after, names=("after", "before"), alpha=alpha, power=power, n_boot=n_boot)
    if comp.p_value is None:
        raise LedgerError(f"fix #{fix_id}: no game was measured in both runs; nothing to compare")
    verdict = stats.verdicts({"fix": comp}, alpha=alpha, family=f"fix #{fix_id}", correction="none")["fix"]
    promised = "improvement" if fix["direction"] == "up" else "regression"
    moved = verdict.word == promised
    sign = 1 if fix["direction"] == "up" else -1
    size_ok = fix["expected_size"] is None or sign * comp.difference >= fix["expected_size"]
    numbers = (f"{fix['metric']} {comp.control_rate:.3f} -> {comp.treatment_rate:.3f} "
               f"({100 * comp.difference:+.1f} pts, 95% CI [{100 * comp.ci_low:+.1f}, "
               f"{100 * comp.ci_high:+.1f}], {stats.test_name(comp.test)} "
               f"p={comp.p_value:.2g}, b/c={comp.b}/{comp.c} games up/down, paired n={comp.n_paired} of "
               f"{comp.n_paired + comp.n_dropped}, dropped {comp.n_dropped})")
    expected = f"expected {fix['direction']}" + ("" if fix["expected_size"] is None else f" by {fix['expected_size']}")
    if moved:
        detail = f"verified: {verdict.line()}; {numbers}; {expected}" + (
            "" if size_ok else f", smaller than the expected {fix['expected_size']}")
    elif verdict.word == "attrition":
        detail = (f"reopened: {verdict.line()}; {numbers}; {expected}. The runs lost games unevenly: measure "
                  "again with what made games unmeasured fixed before judging the diagnosis.")
    elif verdict.word in ("not detected", "can't tell yet"):
        detail = (f"reopened: {verdict.line()}; {numbers}; {expected}. The number did not move "
                  "detectably at this n: measure on more games before calling the diagnosis wrong.")
    else:
        detail = (f"reopened: {verdict.line()}; {numbers}; {expected}. The number moved the other "
                  "way: the diagnosis was wrong.")
    ledger.record_fix_verdict(fix_id, after_run_id, moved, detail)
    return {"fix_id": fix_id, "verified": moved, "detail": detail, "comparison": comp.to_dict(),
            "verdict": verdict.to_dict()}
