"""`skillos export inspect`: a run's games as an inspect_ai eval log, written through inspect_ai's
own log API so `inspect view` (and read_eval_log) open it.

One sample per game (and an epoch per trial where a game was played several times: eval.trials,
each with its own trace, score and counts): the executor's conversation rebuilt from the game's trace (the task and
the retrieved skills, then each observation and the action taken), the score 1/0 for a measured
game and no score at all for an unmeasured one (never a 0), and metadata: arm, phase, task
type, the skills retrieved with their scores, coerced actions, the unmeasured reason.
Samples of different arms share a game id, so a sample's id is ARM/GAME_ID.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from pathlib import Path

import yaml

from skillos.errors import SkillosError
from skillos.evals.run_folder import CONFIG, ROW_FILES, TRACES, read_config
from skillos.view.data import read_jsonl
from skillos.evals.records import TRIALS_SCHEMA_VERSION, check_schema, row_trials
from skillos.evals.trace import damage
from skillos.secrets import redact

SCORER = "skillos_success"


def _messages(row: dict, trace: dict | None):
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    retrieved = (trace or {}).get("retrieved") or [{"skill": s, "score": None} for s in row.get("skills_retrieved", [])]
    skills = "\n".join(f"- {h['skill']}" + (f" (score {h['score']:.3f})" if h.get("score") is not None else "")
                       for h in retrieved) or "(none)"
    system = ChatMessageSystem(content=f"Task: {row.get('task')}\nSkills retrieved:\n{skills}")
    if trace is None:  # a run recorded before trajectories were kept: the task only
        return [system, ChatMessageUser(content=row.get("task") or "")]
    messages = [system, ChatMessageUser(content=trace.get("intro") or row.get("task") or "")]
    for step in trace.get("steps", []):
        note = f" [coerced: the executor typed {step.get('proposed')!r}]" if step.get("coerced") else ""
        messages.append(ChatMessageAssistant(content=step["action"] + note))
        messages.append(ChatMessageUser(content=step["observation"]))
    return messages


def _play_counts(row: dict, trace: dict | None, measured: bool) -> dict:
    """A sample's steps, coerced actions and unmeasured reason: the row's for a game played once;
    for one trial of a game played several times (eval.trials), its own trace's (the row sums its
    trials), None where that trial has no trace."""
    if row.get("trials") is None:
        return {"steps": row.get("steps"), "coerced_actions": row.get("coerced_actions"),
                "unmeasured_reason": row.get("unmeasured_reason")}
    steps = (trace or {}).get("steps")
    return {"steps": len(steps) if trace else None,
            "coerced_actions": sum(bool(s.get("coerced")) for s in steps) if trace else None,
            "unmeasured_reason": None if measured else (trace or {}).get("unmeasured_reason") or row.get("unmeasured_reason")}


def export_run(run_dir: Path, out: Path, phase: str = "eval") -> dict:
    """Write RUN_DIR's games of `phase` to OUT (.eval or .json); returns what was written."""
    run_dir, out = Path(run_dir), Path(out)
    names = ROW_FILES
    if phase not in names:
        raise SkillosError(f"--phase {phase!r}: choose eval or train")
    rows_path = run_dir / names[phase]
    if not rows_path.is_file():
        raise SkillosError(f"{rows_path}: no such file; RUN_DIR must be a run folder (skillos eval / quickstart --out)")
    if out.suffix not in (".eval", ".json"):
        raise SkillosError(f"{out}: the log's name must end in .eval or .json (inspect_ai's two formats)")
    try:
        from inspect_ai.log import (EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalResults, EvalSample,
                                    EvalScore, EvalSpec, EvalStats, write_eval_log)
        from inspect_ai.model import ModelOutput
        from inspect_ai.scorer import Score
    except ImportError:
        raise SkillosError("skillos export inspect needs inspect_ai: pip install 'skillos[inspect]'") from None
    problems: list = []
    rows = read_jsonl(rows_path, problems)
    if not rows:
        raise SkillosError(f"{rows_path}: no games recorded" + (f" ({problems[0]})" if problems else ""))

    for number, row in enumerate(rows, 1):
        check_schema(row, f"{rows_path} row {number}", TRIALS_SCHEMA_VERSION)  # a game's trials: its epochs
        if row.get("success") not in (True, False, None) or not isinstance(row.get("game_id"), str):
            raise SkillosError(f"{rows_path} row {number}: damaged row (success {row.get('success')!r}, game_id "
                               f"{row.get('game_id')!r})")
    traces = {}
    if (run_dir / TRACES).exists():
        for t in read_jsonl(run_dir / TRACES, problems):
            wrong = damage(t)
            if wrong:
                raise SkillosError(f"{run_dir / TRACES}: damaged trace of game {str(t.get('game_id'))[:60]!r} "
                                   f"({wrong}); move the line away and export again")
            traces[(t.get("arm"), t.get("phase"), t.get("game_id"), t.get("trial") or 0)] = t  # the last one wins
    config = {}
    if (run_dir / CONFIG).exists():
        config = read_config(run_dir) or {}
        config = config if isinstance(config, dict) else {}
    executor = config.get("executor") or {}
    model = f"{executor.get('backend', 'unknown')}/{executor.get('model') or 'none'}"

    rows = [redact(r) for r in rows]  # a key written into a run file by hand stays out of the log
    traces = {k: redact(t) for k, t in traces.items()}
    samples, scored, won = [], 0, 0
    # a game played several times (eval.trials) is one sample with an epoch per trial, as inspect
    # keeps repeated plays; its trials' scores, unmeasured ones unscored
    plays = [(row, k + 1, t) for row in rows for k, t in enumerate(row_trials(row))]
    for row, epoch, success in plays:
        trace = traces.get((row.get("arm"), phase, row.get("game_id"), epoch - 1))
        measured = success is not None
        scores = None
        if measured:
            scored += 1
            won += success
            scores = {SCORER: Score(value=int(success) if success in (0.0, 1.0) else success,
                                    answer="won" if success == 1.0 else "lost")}
        messages = _messages(row, trace)
        last = trace["steps"][-1]["action"] if trace and trace.get("steps") else ""
        samples.append(EvalSample(
            id=f"{row.get('arm')}/{row.get('game_id')}", epoch=epoch, input=messages[:2], target="won",
            messages=messages, output=ModelOutput.from_content(model, last), scores=scores,
            metadata={"arm": row.get("arm"), "phase": phase, "game_id": row.get("game_id"),
                      "task": row.get("task"), "task_type": row.get("task_type"),
                      "skills_retrieved": (trace or {}).get("retrieved") or row.get("skills_retrieved", []),
                      **_play_counts(row, trace, measured), "repo_size": row.get("repo_size"),
                      "unmeasured": not measured}))
    experiment = (config.get("experiment") or {}).get("name") or run_dir.name
    def stamp(path: Path) -> str:
        return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc).isoformat(timespec="seconds")

    # the run began when its config was written and ended with its last row
    created = stamp(run_dir / CONFIG) if (run_dir / CONFIG).exists() else stamp(rows_path)
    metric = {"accuracy": EvalMetric(name="accuracy", value=won / scored if scored else float("nan"))}
    log = EvalLog(
        status="success",
        eval=EvalSpec(created=created, task=f"skillos/{experiment}", model=model,
                      dataset=EvalDataset(name=f"{experiment}:{phase}", samples=len(samples)),
                      config=EvalConfig(epochs=max(epoch for _, epoch, _ in plays)),
                      metadata={"run_dir": str(run_dir.resolve()), "phase": phase,
                                                     "arms": sorted({str(r.get('arm')) for r in rows})}),
        results=EvalResults(total_samples=len(samples), completed_samples=len(samples),
                            scores=[EvalScore(name=SCORER, scorer=SCORER, scored_samples=scored,
                                              unscored_samples=len(samples) - scored, metrics=metric)]),
        stats=EvalStats(started_at=created, completed_at=stamp(rows_path)), samples=samples)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.stem}-", suffix=out.suffix, dir=out.parent)
    os.close(fd)
    try:  # written beside the target, then renamed: never a half-written log
        write_eval_log(log, tmp, format=out.suffix[1:])
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {"out": str(out), "samples": len(samples), "scored": scored, "unscored": len(samples) - scored,
            "won": won, "traced": sum((r.get("arm"), phase, r.get("game_id"), e - 1) in traces for r, e, _ in plays),
            "problems": problems}
