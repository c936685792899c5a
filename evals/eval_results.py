"""Hugging Face's `.eval_results/<benchmark>.yaml` (the Hub's model-repo evaluation results), written
from a skillos run: one file per arm, since the Hub keeps each variant of a benchmark in a file of
its own (the control, the run without skills, is the default variant `<benchmark>.yaml`; every
other arm is `<benchmark>_<arm>.yaml` with its setup in `notes`).

Each file is a list of one entry: `dataset` (`id`, `task_id`), `value` (the arm's success rate in
percent over its measured games), `date`, `source` (`url`, `name`) and `notes`, which carry what
the format has no field for: the denominators (games won, measured, unmeasured) and, for an arm
beside the control, skillos's paired comparison (b/c, exact McNemar p, the Holm-adjusted p over
the run's arms, the 95% CI) and its verdict. An arm with no measured game has no value to write,
so it gets no file, and the result says why.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import yaml

from skillos.errors import SkillosError
from skillos.evals import stats
from skillos.config.eval import EvalConfig
from skillos.evals.run_folder import GAMES, control_arm, held_out_rows, outcomes_by_arm, recorded_config
from skillos.files import write_atomic

FOLDER = ".eval_results"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "arm"


def _run_date(run_dir: Path) -> str:
    stamp = (run_dir / GAMES).stat().st_mtime
    return dt.datetime.fromtimestamp(stamp, dt.timezone.utc).date().isoformat()


def _entry(dataset: str, task: str, value: float, date: str, source: str, name: str, notes: str) -> dict:
    return {"dataset": {"id": dataset, "task_id": task}, "value": value, "date": date,
            "source": {"url": source, "name": name}, "notes": notes}


def export_eval_results(run_dir: Path, out: Path, dataset: str | None = None, task: str | None = None,
                        source_url: str | None = None) -> dict:
    """Write RUN_DIR's arms as OUT/.eval_results/*.yaml (OUT: a model repo folder, or the
    .eval_results folder itself). `dataset` and `task` default to the run's environment and
    held-out split; `source_url` to the run folder's file URL."""

    run_dir, out = Path(run_dir), Path(out)
    rows = held_out_rows(run_dir)
    config = recorded_config(run_dir)
    env = config.get("env") or {}
    dataset = dataset or f"skillos/{env.get('name') or 'household'}"
    task = task or env.get("split") or "valid_unseen"
    benchmark = _slug(dataset.rsplit("/", 1)[-1])
    arms = sorted({r["arm"] for r in rows})
    declared = control_arm(run_dir, arms)
    control = declared or arms[0]  # a run that names no control: its first arm is the reference
    role = "the control (no skills)" if declared else "the reference (the run names no control)"
    names = {a: f"{benchmark}.yaml" if a == control else f"{benchmark}_{_slug(a)}.yaml" for a in arms}
    if len(set(names.values())) < len(names):
        raise SkillosError(f"{run_dir}: arms {', '.join(arms)} would share a file name under {FOLDER}/ "
                           "(names are cut to letters, digits, '.', '_' and '-')")
    outcomes = outcomes_by_arm(rows)
    e = EvalConfig()
    alpha = (config.get("eval") or {}).get("alpha") or e.alpha
    comparisons = {a: stats.compare_units(outcomes[control], outcomes[a], names=(a, control), alpha=alpha,
                                          power=e.power, n_boot=e.bootstrap) for a in arms if a != control}
    worthwhile = (config.get("experiment") or {}).get("expected_effect")  # as the run's report decided
    decided = stats.verdicts(comparisons, alpha=alpha, family=f"{run_dir.name}: arms vs {control}", correction="holm",
                             worthwhile=worthwhile)
    folder = out if out.name == FOLDER else out / FOLDER
    stale = _stale(folder, benchmark, {names[a] for a in arms
                                       if any(stats.unit_mean(v) is not None for v in outcomes[a].values())})
    date, source = _run_date(run_dir), source_url or run_dir.resolve().as_uri()
    written, skipped = {}, {}
    for arm in [control] + [a for a in arms if a != control]:
        measured = [m for m in map(stats.unit_mean, outcomes[arm].values()) if m is not None]
        counts = _counts(outcomes[arm], measured)
        if not measured:
            skipped[arm] = f"no measured game ({counts}): no value to write"
            continue
        if arm == control:
            notes = f"skillos arm {arm}, {role}: {counts}"
        else:
            c, v = comparisons[arm], decided[arm]
            p = "unmeasured" if c.p_value is None else f"{c.p_value:.3g}"
            ci = "" if c.ci_low is None else f", 95% CI [{100 * c.ci_low:+.1f}, {100 * c.ci_high:+.1f}] pts"
            moved = "games up/down" if c.test == "wilcoxon" else "b/c"
            notes = (f"skillos arm {arm}: {counts}; vs {control} on {c.n_paired} paired games: {moved} "
                     f"{c.b}/{c.c}, {stats.test_name(c.test)} p {p}, Holm over {len(comparisons)} arm(s) "
                     f"{'unmeasured' if v.p_adjusted is None else f'{v.p_adjusted:.3g}'}{ci}; verdict: {v.label}")
        name = names[arm]
        entry = _entry(dataset, task, round(100 * sum(measured) / len(measured), 2), date, source,
                       f"skillos run {run_dir.name}", notes)
        write_atomic(folder / name, yaml.safe_dump([entry], sort_keys=False, allow_unicode=True))
        written[arm] = str(folder / name)
    for path in stale:  # an earlier export's arms this run does not have: gone, so no file is another run's
        path.unlink()
    return {"out": str(folder), "files": written, "skipped": skipped, "dataset": dataset, "task": task,
            "control": control, "removed": [str(p) for p in stale]}


def _counts(games: dict, measured: list) -> str:
    """An arm's denominators: games won of measured, or for games of several trials (eval.trials)
    the mean score over games with the trials counted."""
    if stats.is_binary_single(games):
        return f"{int(sum(measured))}/{len(measured)} measured games won, {len(games) - len(measured)} unmeasured"
    trials = stats.score_summary(list(games.values()))
    return (f"mean score {trials['mean_score']:.3f} over {len(measured)} measured games ({trials['trials']} "
            f"trials, {trials['trials_unmeasured']} unmeasured), {len(games) - len(measured)} games unmeasured")


def _stale(folder: Path, benchmark: str, writing: set) -> list[Path]:
    """The files of this benchmark in `folder` that this export will not write: an earlier skillos
    export's arms (removed after the new files are written, so the folder holds one run), or a
    one-line refusal, before anything is written, when one is not skillos's."""
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob(f"{benchmark}*.yaml")):
        if path.name in writing or not (path.name == f"{benchmark}.yaml" or path.name.startswith(f"{benchmark}_")):
            continue
        try:
            entries = yaml.safe_load(path.read_text(encoding="utf-8"))
            ours = all(str(e["source"]["name"]).startswith("skillos run ") for e in entries)
        except (OSError, ValueError, yaml.YAMLError, TypeError, KeyError, AttributeError):
            ours = False
        if not ours:
            raise SkillosError(f"{path}: a result of benchmark {benchmark} that skillos did not write, and that this "
                               "export would leave beside another run's files; move it, or export elsewhere")
        out.append(path)
    return out
