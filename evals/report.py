"""The report of one eval: per-arm and per-task-type success with denominators, and the paired
comparison of every arm against the control (McNemar, bootstrap CI, MDE, Holm within the family).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from skillos.evals import stats
from skillos.evals.records import ArmSummary, EvalReport, row_outcome
from skillos.evals.arms import arm_settings
from skillos.evals.envs.registry import environment
from skillos.evals.records import read_game_rows
from skillos.evals.run_folder import ROW_FILES


def scored(rows: list[dict]) -> bool:
    """Whether rows hold several trials per game (eval.trials): then an arm reports its mean
    score over games (each game's trials averaged), never a count of won games."""
    return any(r.get("trials") is not None for r in rows)


def arm_summary(rows: list[dict]) -> dict:
    measured = [r for r in rows if not r["unmeasured"]]
    by_trials = scored(rows)
    actions = sum(r["steps"] for r in rows)
    coerced = sum(r["coerced_actions"] for r in rows)
    by_type = defaultdict(lambda: {"attempted": 0, "measured": 0, "successes": 0})
    for r in rows:
        by_type[r["task_type"]]["attempted"] += 1
    for task_type, t in by_type.items():
        typed = [r for r in measured if r["task_type"] == task_type]
        t["measured"] = len(typed)
        if by_trials:
            t["successes"], t["mean_score"] = None, stats.mean_score([row_outcome(r) for r in typed])
        else:
            t["successes"] = sum(bool(r["success"]) for r in typed)
    successes = None if by_trials else sum(bool(r["success"]) for r in measured)
    trials = stats.score_summary([row_outcome(r) for r in rows]) if by_trials else {}
    reasons = sorted({r["unmeasured_reason"] for r in rows if r["unmeasured"] or r.get("unmeasured_reason")})
    return ArmSummary(
        attempted=len(rows),
        measured=len(measured),
        unmeasured=len(rows) - len(measured),
        unmeasured_reasons=reasons[:5],
        successes=successes,
        success_rate=(trials["mean_score"] if by_trials else successes / len(measured) if measured else None),
        actions=actions,
        coerced_actions=coerced,
        coercion_rate=coerced / actions if actions else None,
        final_repo_size=rows[-1]["repo_size"] if rows else 0,
        by_task_type=dict(sorted(by_type.items())),
        grading_timeouts=sum(r.get("grading_timeouts", 0) for r in rows),
        unread_answers=sum(r.get("unread_answers", 0) for r in rows),
        **trials,
        **curation_summary(rows),
    ).to_dict()


def curation_summary(rows: list[dict]) -> dict:
    """The curator's calls after these games: failed calls and refused operations are counted
    beside the coercion rate (an invisible curator failure looks like a curator that chose not
    to edit). Rows written before these counts existed count as zero."""
    calls = sum(r.get("curator_calls", 0) for r in rows)
    failed = sum(r.get("curator_failed_calls", 0) for r in rows)
    applied = sum(r.get("curator_applied_ops", 0) for r in rows)
    refused = sum(r.get("curator_refused_ops", 0) for r in rows)
    return {"curator_calls": calls, "curator_failed_calls": failed,
            "curator_failure_rate": failed / calls if calls else None,
            "curator_applied_ops": applied, "curator_refused_ops": refused}


def _train_curation(out: Path, arms: list) -> dict:
    """Per arm, the curator's counts over its train games (curation.jsonl)."""
    import json

    rows: dict = {arm: [] for arm in arms}
    for r in read_game_rows(Path(out) / ROW_FILES["train"], "curation rows"):
        if r.get("arm") in rows:
            rows[r["arm"]].append(r)
    return {arm: curation_summary(arm_rows) for arm, arm_rows in rows.items() if arm_rows}


def build(cfg, rows: dict[str, list[dict]], out: Path, n_train: int) -> dict:
    domain = environment(cfg)
    # several trials a game: the units are games, their trials averaged (stats.compare_units)
    by_trials = any(scored(arm_rows) for arm_rows in rows.values())
    outcomes = {arm: {r["game_id"]: row_outcome(r) for r in arm_rows} for arm, arm_rows in rows.items()}
    compare = stats.compare_units if by_trials else stats.compare
    control = cfg.eval.control.arm
    comparisons = [
        compare(outcomes[control], outcomes[arm], names=(arm, control), alpha=cfg.eval.alpha,
                power=cfg.eval.power, n_boot=cfg.eval.bootstrap)
        for arm in rows if arm != control
    ]
    decided = stats.verdicts({c.treatment: c for c in comparisons}, alpha=cfg.eval.alpha,
                             family=f"{cfg.experiment.name}: arms vs {control}", correction="holm",
                             worthwhile=cfg.experiment.expected_effect)
    for comp in comparisons:
        verdict = decided[comp.treatment]
        comp.p_adjusted = verdict.p_adjusted
        comp.significant = None if comp.p_value is None else verdict.p_adjusted < cfg.eval.alpha
    return EvalReport(
        experiment=cfg.experiment.name,
        hypothesis=cfg.experiment.hypothesis,
        config_hash=cfg.hash(),
        output_dir=str(out),
        env={"name": cfg.env.name, "split": cfg.env.split, "n_games": cfg.env.n_games, "trials": cfg.eval.trials,
             "train_split": cfg.env.train_split, "n_train_games": n_train,
             "max_steps": arm_settings(cfg)["max_steps"], "seed": cfg.env.seed, "data": cfg.env.data,
             "held_out_from": domain.describe(cfg, cfg.env.split),
             "train_from": domain.describe(cfg, cfg.env.train_split)},
        retrieval={"top_k": cfg.retrieval.top_k, "mode": cfg.retrieval.mode},
        control=control,
        arms={arm: ArmSummary.from_dict(arm_summary(arm_rows)) for arm, arm_rows in rows.items()},
        comparisons=[{**c.to_dict(), "verdict": decided[c.treatment].to_dict()} for c in comparisons],
        family_correction="holm",
        train_curation=_train_curation(out, list(rows)),
        family={"name": f"{cfg.experiment.name}: arms vs {control}", "size": len(comparisons)},
    ).to_dict()

