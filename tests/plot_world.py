"""A small world for the plot tests, written in a blink (no game played, no model trained): an
eval run, a checkpoint sweep and a training output folder as the real writers lay them out, and
a ledger whose experiments name them. The comparisons and verdicts come from evals/stats.py and
the sweep table from evals/sweep.summarize, as a real run's would; only the games are made up."""

from __future__ import annotations

import json
from pathlib import Path

from skillos.evals import stats
from skillos.evals.sweep import summarize

ALPHA, POWER = 0.05, 0.8


def games(pattern: str) -> dict:
    """'1' won, '0' lost, '.' unmeasured, one character a game."""
    return {f"g{i:02d}": {"1": True, "0": False, ".": None}[ch] for i, ch in enumerate(pattern)}


def summary(outcomes: dict) -> dict:
    measured = [v for v in outcomes.values() if v is not None]
    return {"attempted": len(outcomes), "measured": len(measured), "unmeasured": len(outcomes) - len(measured),
            "unmeasured_reasons": ["ConnectionError: executor endpoint down"] if len(measured) < len(outcomes) else [],
            "successes": sum(measured), "success_rate": sum(measured) / len(measured) if measured else None,
            "coerced_actions": 0}


def report(arms: dict, control: str, family: str, drop_verdict: str | None = None) -> dict:
    """report.json as evals/report.build writes it; `drop_verdict`: one comparison written
    without its verdict (a report from before comparisons carried one)."""
    comps = [stats.compare(arms[control], arms[a], names=(a, control), alpha=ALPHA, power=POWER, n_boot=400)
             for a in arms if a != control]
    decided = stats.verdicts({c.treatment: c for c in comps}, alpha=ALPHA, family=family, correction="holm")
    out = []
    for c in comps:
        c.p_adjusted = decided[c.treatment].p_adjusted
        row = {**c.to_dict(), "verdict": decided[c.treatment].to_dict()}
        if c.treatment == drop_verdict:
            del row["verdict"]
        out.append(row)
    return {"control": control, "arms": {a: summary(o) for a, o in arms.items()}, "comparisons": out,
            "family_correction": "holm", "family": {"name": family, "size": len(comps)}, "env": {"name": "household"}}


def jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def eval_run(folder: Path, arms: dict, control: str, family: str, drop_verdict=None) -> dict:
    folder.mkdir(parents=True)
    jsonl(folder / "games.jsonl", [{"arm": a, "phase": "eval", "game_id": g, "task_type": "pick", "task": "t",
                                    "success": v, "unmeasured": v is None, "steps": 3, "coerced_actions": 0,
                                    "unmeasured_reason": None if v is not None else "ConnectionError",
                                    "skills_retrieved": [], "repo_size": 0}
                                   for a, o in arms.items() for g, v in o.items()])
    rep = report(arms, control, family, drop_verdict)
    (folder / "report.json").write_text(json.dumps(rep))
    return rep


def training_state(step: int, health_gap_at: int) -> dict:
    """trainer_state.json of a checkpoint: TRL's reward, KL and entropy with skillos's reward
    components and health numbers beside them (one step without its health numbers), then the
    run's closing summary line."""
    history = []
    for s in range(1, step + 1):
        entry = {"step": s, "epoch": s / 10, "loss": 0.01 * s, "reward": 0.1 * s, "reward_std": 0.05,
                 "kl": 0.001 * s * s, "entropy": 1.0 - 0.05 * s, "reward/mean": 0.1 * s,
                 "reward/r_task": 0.05 * s, "reward/r_fc": 0.02 * s, "reward/r_cnt": 0.5,
                 "health/task_share": 0.6, "health/unmeasured_rollouts": float(s % 2)}
        if s == health_gap_at:
            entry = {k: v for k, v in entry.items() if not k.startswith("health/")}
        history.append(entry)
    history.append({"step": step, "train_runtime": 12.0, "train_loss": 0.02})
    return {"global_step": step, "log_history": history}


def build(root: Path) -> dict:
    home, runs = root / "home", root / "runs"
    arms = {"no_memory": games("0101001100"), "closed_loop": games("1111011101"),
            "broken": games(".........."), "flaky": games("1.0.1.0.11")}
    eval_report = eval_run(runs / "exp1", arms, "no_memory", "exp1: arms vs no_memory", drop_verdict="flaky")
    sweep_arms = {"no_memory": games("0101001100"), "curator:checkpoint-10": games("0111001100"),
                  "curator:checkpoint-20": games("1111101101"), "curator:checkpoint-30": games("0101011100")}
    sweep_report = eval_run(runs / "sweep", sweep_arms, "no_memory", "sw: arms vs no_memory")
    sweep = summarize(sweep_report)
    (runs / "sweep" / "sweep.json").write_text(json.dumps(sweep))
    train = runs / "train"
    for step in (2, 4):
        for where in (train / f"checkpoint-{step}", train / "archive" / f"checkpoint-{step}"):
            where.mkdir(parents=True)
            (where / "trainer_state.json").write_text(json.dumps(training_state(step, health_gap_at=3)))

    from skillos.ledger import Ledger

    with Ledger(home / "ledger.db") as ledger:
        exp = ledger.add_experiment("exp1", hypothesis="curated skills help")
        for arm, outcomes in arms.items():
            run = ledger.start_run(exp, arm=arm, config={"output": str(runs / "exp1")}, seed=1)
            s = summary(outcomes)
            ledger.add_eval(run, arm, {**s, "actions": 3 * s["attempted"]}, str(runs / "exp1" / "games.jsonl"), "0")
            ledger.end_run(run, "finished")
        swept = ledger.add_experiment("sw-sweep", hypothesis="a curve")
        run = ledger.start_run(swept, arm="no_memory", config={"output": str(runs / "sweep")}, seed=1)
        ledger.end_run(run, "finished")
        trained = ledger.add_experiment("curator-train", hypothesis="GRPO")
        run = ledger.start_run(trained, arm="train", config={"training": {"output_dir": str(train)},
                                                             "experiment": {"name": "curator-train"}}, seed=1)
        ledger.end_run(run, "finished")
        # every config has a training section; a run that is not a training run did not write there
        other = ledger.start_run(trained, arm="optimize", config={"training": {"output_dir": None}}, seed=1)
        ledger.end_run(other, "finished")
        bare = ledger.add_experiment("ledger-only", hypothesis="no folder")
        run = ledger.start_run(bare, arm="a", config={"output": str(root / "gone")}, seed=1)
        ledger.add_eval(run, "a", {"attempted": 4, "measured": 3, "unmeasured": 1, "successes": 2,
                                   "coerced_actions": 0, "actions": 4}, None, None)
    return {"root": root, "home": home, "runs": runs, "report": eval_report, "sweep": sweep,
            "sweep_report": sweep_report, "experiments": {"eval": exp, "sweep": swept, "train": trained, "bare": bare}}
