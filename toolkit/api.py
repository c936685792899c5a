"""The public library API: what a notebook, an agent and the CLI all call, with the same
guarantees. Each entry point that spends compute runs the launch gates itself (raising
`GateRefused`, which carries the gates' report, before any game is played), records the gates,
overrides and runs in the ledger, starts the watchdog (gate 7) where a launch runs long, and
returns its report.

    import skillos
    cfg = skillos.load("evals/configs/quickstart.yaml", sets=["env.n_games=6"])
    report = skillos.evaluate(cfg, out="runs/q")          # gates, ledger, watchdog, report
    skillos.compare(cfg, ["closed_loop"])                  # family, verdicts from evals/stats.py

`config` is a `Config` or a path to one. `overrides` is {check: "reason"}: a person's decision
to launch despite a failing check, recorded in the ledger as a process failure. `ledger` is an
open `skillos.ledger.Ledger`; by default the one at $SKILLOS_HOME is opened and closed.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Callable, Iterator

from skillos.config.derived import training_output_dir
from skillos.config.loading import load as load_config, revalidate, validate, with_sets
from skillos.config.matrix import expand
from skillos import gates
from skillos.registry import IN_PROCESS, compute_of
from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos.gates import GateRefused, Report
from skillos.evals import conclusion, distributed, matrix, sweep as sweeping
from skillos.evals.backends import usage
from skillos.evals.compare import compare_configurations, compare_runs
from skillos.evals.distributed import cluster
from skillos.evals.experiment import run_eval
from skillos.evals.imported import Mapping, import_results
from skillos.evals.run_folder import (ROW_FILES, SWEEP, check_out, default_out_dir, finished_report, read_rows,
                                      same_config)
from skillos.evals import slate_eval
from skillos.files import write_atomic
from skillos.gates import approval
from skillos.checking import Context
from skillos.gates.static import extras
from skillos.ledger import Ledger
from skillos.ledger.experiments import record_experiment
from skillos.ledger.store import actor, default_path
from skillos.ledger.watchdog import launch_watch, watching
from skillos.safety import json_text
from skillos.secrets import redact_text
from skillos.training import canary as canaries
from skillos.training.common import launch, serve_adapters
from skillos.training.textopt import optimize as optimizing
from skillos.training.textopt.sleep import run_night
from skillos.training.textopt.sleep.stage import sleep_home

__all__ = ["GateRefused", "canary", "check", "compare", "evaluate", "import_runs", "load", "evaluate_slate", "optimize",
           "plan", "sleep", "sweep", "train"]

Echo = Callable[[str], None]


def load(path: str | Path, sets: list[str] | tuple = ()) -> Config:
    """A config file, with `KEY=VALUE` overrides (`env.n_games=6`), validated.

    Args:
        path: the YAML config file; relative paths it names resolve beside it.
        sets: `KEY=VALUE` overrides applied before validation, as `--set` does.
    Returns:
        The validated Config (every named input folder or file checked to exist).
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
    """
    return load_config(path, sets=sets)


def check(config: Config | str | Path, *, dry_run: bool = False, echo: Echo | None = None,
          ledger=None, trace: bool = False, partial: bool = False, verbose: bool = False) -> Report:
    """The launch gates on a config, recorded nowhere: the report, or GateRefused carrying it
    when a check failed (gate 6 reads the ledger when the config names a fix). `trace` (and
    `dry_run`) also trace every gated key to what its consumer receives (`report.trace`).

    Args:
        config: a Config (validated again: it may have changed since it loaded) or a path to a
            config file.
        dry_run: also run the checks that execute code (tool surface, reward arithmetic, a few
            real rollouts, the task distribution, split hashes, free disk).
        echo: called with each progress line; None: quiet.
        ledger: read only by gate 6 (a config naming a fix); None: the one at $SKILLOS_HOME.
        trace: trace every gated key to its consumer (`report.trace`).
        partial: checks that cannot run for what this machine lacks (data, a key, an extra) give
            a report whose `missing` says what (exit code 3) instead of raising.
        verbose: `echo` gets the SKIP rows too.
    Returns:
        The gates' Report: every result (PASS / WARN / FAIL / SKIP) with its gate, key and values.
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
        GateRefused: a launch gate failed and was not overridden (`.report` holds every check).
    """
    cfg = _config(config)
    with _ledger(ledger, needed=cfg.experiment.fixes_failure is not None) as book:
        report = gates.check(cfg, dry_run=dry_run, ledger=book, echo=echo, trace=trace, partial=partial,
                             verbose=verbose)
    return gates.refuse_on_failure(report, "check")


def plan(config: Config | str | Path, *, out: str | Path | None = None, sets: list | tuple = ()) -> dict:
    """The plan an agent proposes for a config, written for a person to approve (`skillos approve
    PLAN`): hypothesis, arms, seeds, metric, the MDE and the games it needs, the estimated cost,
    the config hash (gates/approval.py). Runs the static gates, records nothing; `sets` are the
    --set values the config was loaded with (approve loads it the same way to check its hash).
    Returns {path, short_hash, plan}; default OUT: $SKILLOS_HOME/plans/EXPERIMENT-HASH.json.

    Args:
        config: a Config (validated again: it may have changed since it loaded) or a path to a
            config file.
        out: where to write the plan; None: $SKILLOS_HOME/plans/EXPERIMENT-HASH.json.
        sets: the --set values the config was loaded with.
    Returns:
        {path, short_hash, plan}: the file written, the hash a person approves, the plan itself.
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
    """

    cfg = _config(config)
    source = str(Path(cfg.source).resolve()) if cfg.source else None
    plan_ = proposal(cfg, source, list(sets), actor())
    path = Path(out) if out else default_path().parent / "plans" / f"{cfg.experiment.name}-{cfg.hash()}.json"
    for item in plan_["before_launch"]:  # the person's step names this file
        item["command"] = item["command"].replace("skillos approve PLAN", f"skillos approve {path}")
    text = redact_text(approval.plan_text(plan_))  # as write_atomic writes it: the hash is the file's
    write_atomic(path, text)
    return {"path": str(path), "short_hash": approval.short_hash(text), "plan": plan_}


def proposal(cfg: Config, source: str | None, sets: list, proposed_by: str | None) -> dict:
    """The plan of a loaded config, computed from it alone (the static gates and the step plan):
    what `plan` writes, and what `skillos approve` computes again and shows the person."""
    return approval.build(cfg, gates.check(cfg, dry_run=False, machine=True), source, list(sets), proposed_by)


def evaluate(config: Config | str | Path, *, out: str | Path | None = None,
             overrides: dict | None = None, resume: bool = False, overwrite: bool = False,
             progress=None, echo: Echo | None = None, ledger=None, command: str = "eval") -> dict:
    """Every arm of the config on the same held-out games: gates, then the run, under the
    watchdog; the report (also written to OUT/report.json), recorded in the ledger.

    Args:
        config: a Config (validated again: it may have changed since it loaded) or a path to a
            config file.
        out: the run folder; None: a new one under eval.output_dir named after the experiment.
        overrides: {check: "reason"}, a person's decision to launch despite a failing check,
            recorded in the ledger as a process failure.
        resume: continue the run in `out` (finished games are not played again).
        overwrite: delete what is in `out` and start over.
        progress: a progress callback (the CLI's bars); None: none.
        echo: called with each progress line; None: quiet.
        ledger: an open skillos.ledger.Ledger; None: the one at $SKILLOS_HOME, opened and closed.
        command: the command name recorded with the gates (eval, quickstart, sweep).
    Returns:
        The eval report: the experiment, env, arms with their denominators, comparisons against
        the control with their verdicts from evals/stats.py, and `ledger` ids. A matrix or seed
        replicates return {matrix, runs} (OUT/matrix.json).
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
        GateRefused: a launch gate failed and was not overridden (`.report` holds every check).
        SkillosError: `resume` with `overwrite`, or without `out`; `out` not usable as asked; a
            resumed folder whose config differs.
    """

    cfg, echo = _config(config), echo or _quiet
    if resume and overwrite:
        raise SkillosError("--resume and --overwrite exclude each other")
    if resume and out is None:
        raise SkillosError("--resume needs the --out folder of the run to continue")
    out = Path(out) if out else default_out_dir(cfg)
    used = check_out(out, resume, overwrite)  # before the gates spend time
    if cfg.matrix or cfg.experiment.seeds is not None:
        return _evaluate_runs(cfg, out, overrides=overrides, resume=resume, overwrite=overwrite, progress=progress,
                              echo=echo, ledger=ledger, command=command)
    if resume and used:
        if not same_config(out, cfg):  # known now: refused before the gates' dry run plays a game
            raise SkillosError(f"{out}: its config.yaml differs from this config; resume with the same config "
                               "(and the same --n-games), or choose another --out")
        done = finished_report(out)
        if done is not None:  # a finished run resumed: nothing to play, and nothing new in the ledger
            echo(f"{out}: this run already finished; nothing played, nothing recorded (its report.json)")
            return done
        for phase in ROW_FILES:  # damaged or newer rows: refused before the gates
            read_rows(out, phase)
    with _ledger(ledger) as book:
        before = usage.snapshot()  # the gates' dry run plays games: its calls bill as the arms' do
        gates.enforce(cfg, command, book, overrides, echo=echo)
        with _watching(cfg, [out], book, echo):
            return run_eval(cfg, out, progress, ledger=book, resume=resume, overwrite=overwrite,
                            gate_tokens=usage.since(before))


def _evaluate_runs(cfg: Config, out: Path, *, ledger, echo: Echo, resume: bool, **launch) -> dict:
    """A matrix (or seed replicates): each run evaluated into OUT/LABEL (gated, recorded as a run
    of the one experiment), then every comparison judged as one family (evals/matrix.py), written
    to OUT/matrix.json with the conclusion skillos records. Rerun with `resume` after a kill:
    finished runs are not played again, the one cut short continues, the rest start."""

    runs = expand(cfg)
    matrix.guard_family(out, runs, launch.get("overwrite", False))  # before any game: a family never shrinks
    results, outputs = {}, {}
    with _ledger(ledger) as book, _cluster(cfg):
        for i, run in enumerate(runs, 1):
            echo(f"run {i}/{len(runs)} of {cfg.experiment.name}: {run.label}")
            where = outputs[run.label] = out / run.label
            started = where.is_dir() and any(where.iterdir())  # a resume continues only the runs that began
            results[run.label] = evaluate(run.cfg, out=where, ledger=book, echo=echo, resume=resume and started,
                                          **launch)
            matrix.record_family(out, runs)
        summary = matrix.summarize(cfg, runs, results, outputs)
        summary["experiment_id"] = record_experiment(book, runs[0].cfg)
        summary["conclusion"] = conclusion.record(book, summary["experiment_id"], matrix.conclusion(summary))
    write_atomic(out / "matrix.json", json_text(summary))
    return {"matrix": summary, "runs": results}


def sweep(config: Config | str | Path, *, executor: str, repos: list = (), checkpoints: list = (),
          envs: list = (), out: str | Path | None = None, overrides: dict | None = None,
          resume: bool = False, overwrite: bool = False, progress=None, echo: Echo | None = None,
          ledger=None, dry_run: bool = False) -> dict:
    """Skill repos or curator checkpoints on one target executor with a fresh control: the eval
    report with `sweep` added (the family-corrected rows, the best with its caveat, sweep.png).
    Under `sweep.serve: adapters` the checkpoints are served by one vLLM server while the arms
    play (training/common/serve_adapters.py). `dry_run`: the plan per target ({"plans": {env: plan}}: arms,
    the adapter server if any, the expected wall time), nothing started or played.

    `envs`: the target environments (default the config's own). With more than one (a
    cross-domain transfer in both directions) each target is swept into OUT/ENV with its own
    control, and every row is judged in one family: {"transfer": family, "sweeps": {env: summary}}.

    Args:
        config: a Config (validated again: it may have changed since it loaded) or a path to a
            config file.
        executor: the target executor, BACKEND:MODEL.
        repos: skill folders to sweep, each an arm named after its folder.
        checkpoints: trained curator checkpoints to sweep, each curating its own repo.
        envs: target environments; empty: the config's own.
        out, overrides, resume, overwrite, progress, echo, ledger: as for `evaluate`.
        dry_run: return the plan per target (arms, adapter server, expected wall time) and play nothing.
    Returns:
        The eval report with `sweep` added (with `dry_run`: {"plans": {env: plan}}); several envs: {transfer, sweeps}; a matrix or seed
        replicates: {matrix, runs}.
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
        GateRefused: a launch gate failed and was not overridden (`.report` holds every check).
        SkillosError: no repo or checkpoint, a missing folder, a repo the curator was trained on,
            a cross-domain sweep of a matrix, or `out` not usable as asked.
    """

    base = _config(config)
    if base.matrix or base.experiment.seeds is not None:
        return _sweep_runs(base, executor=executor, repos=repos, checkpoints=checkpoints, envs=envs, out=out,
                           overrides=overrides, resume=resume, overwrite=overwrite, progress=progress, echo=echo,
                           ledger=ledger)
    targets = list(dict.fromkeys(envs)) or [base.env.name]
    out = Path(out) if out else default_out_dir(base)
    runs, plans = {}, {}
    for target in targets:
        cfg = sweeping.sweep_config(base, list(repos), executor, list(checkpoints), target)
        served = serve_adapters.plan(cfg)  # gated: refused before anything starts
        sweeping.check_not_curated_on(cfg, list(repos))  # before the gates play a game, and in a dry run
        if dry_run:
            gates.preview(cfg, "sweep", overrides, echo)
            plans[target] = {"arms": list(cfg.eval.arms), "serve": cfg.sweep.serve, "server": served,
                             "wall": serve_adapters.expected_wall(cfg)}
            if compute_of(cfg).distributes:
                plans[target]["ray"] = distributed.plan(cfg)
            continue
        where = out / target if len(targets) > 1 else out
        with serve_adapters.serving(served, echo or _quiet) if served else contextlib.nullcontext():
            result = evaluate(cfg, out=where, overrides=overrides, resume=resume, overwrite=overwrite,
                              progress=progress, echo=echo, ledger=ledger, command="sweep")
        summary = sweeping.summarize(result, sweeping.sources_of(cfg))
        summary["png"] = sweeping.plot(summary, where / "sweep.png")
        summary["family"] = sweeping.family_table({target: summary}, cfg.eval.alpha)
        result["sweep"] = summary
        write_atomic(where / SWEEP, json.dumps(summary, indent=1))
        runs[target] = result
    if dry_run:
        return {"dry_run": True, "plans": plans}
    if len(targets) == 1:
        return runs[targets[0]]
    summaries = {target: result["sweep"] for target, result in runs.items()}
    family = sweeping.family_table(summaries, base.eval.alpha)
    write_atomic(out / "transfer.json", json.dumps(family, indent=1))
    return {"transfer": family, "sweeps": summaries}


def _sweep_runs(base: Config, *, out, resume: bool, overwrite: bool, ledger, echo: Echo | None, envs: list,
                **sweep_args) -> dict:
    """A sweep of every run of a matrix (or seed replicates) into OUT/LABEL: each repo or checkpoint
    judged in one family over all runs (evals/matrix.py), each run's peak and how far the peaks
    spread, written to OUT/matrix.json with the conclusion skillos records."""

    if len(set(envs)) > 1:
        raise SkillosError(f"{base.source or 'config'}: a cross-domain sweep (several --env) takes one config, "
                           "not a matrix or experiment.seeds")
    out = Path(out) if out else default_out_dir(base)
    check_out(out, resume, overwrite)
    runs, results, outputs = expand(base), {}, {}
    matrix.guard_family(out, runs, overwrite)
    with _ledger(ledger) as book, _cluster(base):
        for i, run in enumerate(runs, 1):
            (echo or _quiet)(f"run {i}/{len(runs)} of {base.experiment.name}: {run.label}")
            where = outputs[run.label] = out / run.label
            started = where.is_dir() and any(where.iterdir())
            results[run.label] = sweep(run.cfg, out=where, resume=resume and started, overwrite=overwrite,
                                       ledger=book, echo=echo, envs=envs, **sweep_args)
            matrix.record_family(out, runs)
        summary = matrix.summarize(base, runs, results, outputs)
        summary["peaks"] = matrix.peaks(runs, results)
        summary["experiment_id"] = results[runs[0].label]["ledger"]["experiment_id"]
        summary["conclusion"] = conclusion.record(book, summary["experiment_id"], matrix.conclusion(summary))
    write_atomic(out / "matrix.json", json_text(summary))
    return {"matrix": summary, "runs": results}


def optimize(config: Config | str | Path, *, out: str | Path | None = None,
             overrides: dict | None = None, resume: bool = False, unseal: str | None = None,
             echo: Echo | None = None, ledger=None) -> dict:
    """Text-space skill optimization, gated and sealed: the seed-vs-best report on the sealed
    test split. `resume` continues a killed run in `out` (its incumbent, history and rejected
    memory); `unseal` is a person's reason to read a split the ledger has sealed (recorded).

    Args:
        config: a Config (validated again: it may have changed since it loaded) or a path to a
            config file.
        out: the run folder; None: a new one under eval.output_dir.
        overrides: {check: "reason"}, a person's decision to launch despite a failing check,
            recorded in the ledger as a process failure.
        resume: continue a killed run in `out`.
        unseal: a person's reason to read a sealed split again (recorded as an override).
        echo: called with each progress line; None: quiet.
        ledger: an open skillos.ledger.Ledger; None: the one at $SKILLOS_HOME, opened and closed.
    Returns:
        The report: the verdict on the sealed test split (seed vs best), the decision, the
        candidates tried; also written to OUT/report.json with best_skill/ and history.jsonl.
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
        GateRefused: a launch gate failed and was not overridden (`.report` holds every check).
        SkillosError: `resume` without `out`, bad splits or seed skills, a resume that cannot
            continue, or a sealed split read without `unseal`.
    """

    cfg, echo = _config(config), echo or _quiet
    if resume and out is None:
        raise SkillosError("--resume needs the --out folder of the run to continue")
    out = Path(out) if out else default_out_dir(cfg)
    used = check_out(out, resume)
    optimizing.preflight(cfg)  # bad splits or seed skills: refused before the gates play anything
    with _ledger(ledger) as book:
        # a resume that cannot continue, or a sealed split already read: refused before any game
        optimizing.precheck(cfg, out, book, resume and used, unseal)
        gates.enforce(cfg, "optimize", book, overrides, echo=echo)
        with _watching(cfg, [out], book, echo):
            return optimizing.run(cfg, out, book, echo=echo, resume=resume, unseal=unseal)


def evaluate_slate(config: Config | str | Path, *, out: str | Path, checkpoints: dict | None = None,
                   overrides: dict | None = None, echo: Echo | None = None, ledger=None) -> dict:
    """SkillGate's slate eval: the config's executor and each checkpoint (NAME -> folder, played
    on backend hf) on frozen skill slates, with the selection metrics, pass@k and paired tests.

    Args:
        config: a Config (validated again: it may have changed since it loaded) or a path to a
            config file.
        out: the folder for the rows and the report.
        checkpoints: NAME -> checkpoint folder, each played as an arm on backend hf.
        overrides: {check: "reason"}, a person's decision to launch despite a failing check,
            recorded in the ledger as a process failure.
        echo: called with each progress line; None: quiet.
        ledger: an open skillos.ledger.Ledger; None: the one at $SKILLOS_HOME, opened and closed.
    Returns:
        The report: pins, per-arm selection metrics and pass@k / pass^k, paired comparisons.
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
        GateRefused: a launch gate failed and was not overridden (`.report` holds every check).
        SkillosError: no skillgate.slate_repo, an `out` that already holds a slate report, or a
            frozen eval spec (skillgate.eval_spec) whose pins differ from this run's.
    """
    cfg, echo = _config(config), echo or _quiet
    with _ledger(ledger) as book, _watching(cfg, [out], book, echo):
        return slate_eval.run(cfg, out, book, checkpoints, echo,
                              gate=lambda c, b: gates.enforce(c, "slate eval", b, overrides, echo=echo))


def sleep(config: Config | str | Path, *, overrides: dict | None = None, tasks_file=None,
          echo: Echo | None = None, ledger=None, unseal: str | None = None) -> dict:
    """One night of `skillos sleep` for `cfg.sleep.skill`: replay mined (or reviewed, `tasks_file`)
    tasks, gate candidates, stage a proposal a person adopts. The launch gates run first. Test
    tasks an earlier night read are sealed in the ledger and left out unless `unseal` gives a
    person's reason (recorded as an override).

    Args:
        config: a Config (validated again: it may have changed since it loaded) or a path to a
            config file.
        overrides: {check: "reason"}, a person's decision to launch despite a failing check,
            recorded in the ledger as a process failure.
        tasks_file: a reviewed task file (JSONL) that replaces mining.
        echo: called with each progress line; None: quiet.
        ledger: an open skillos.ledger.Ledger; None: the one at $SKILLOS_HOME, opened and closed.
        unseal: a person's reason to read test tasks an earlier night read.
    Returns:
        The night's report: status and why it stopped, task counts per split, candidates,
        the accepted one, the sealed test, the budget spent, and the staged `proposal` if any.
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
        GateRefused: a launch gate failed and was not overridden (`.report` holds every check).
        SkillosError: a sleep setting the night cannot run with (no live skill, a backend that
            cannot replay), or unreadable tasks.
    """

    cfg, echo = _config(config), echo or _quiet
    with _ledger(ledger) as book, _watching(cfg, [sleep_home(cfg.sleep) / "nights"], book, echo):
        return run_night(cfg, gate=lambda c, b: gates.enforce(c, "sleep night", b, overrides, echo=echo),
                         ledger=book, tasks_file=tasks_file, echo=echo, unseal=unseal)


def train(config: Config | str | Path, *, backend: str | None = None, overrides: dict | None = None,
          dry_run: bool = False, echo: Echo | None = None, ledger=None) -> dict:
    """Train the curator (GRPO) where compute.backend says: in this process, under accelerate,
    or on Modal. `dry_run`: the static gates and the launch plan, nothing trained. The summary
    has `plan`, `returncode` (0: finished) and, for a local run, steps and checkpoints.

    Args:
        config: a Config (validated again: it may have changed since it loaded) or a path to a
            config file.
        backend: local | accelerate | modal, replacing compute.backend; None: the config's.
        overrides: {check: "reason"}, a person's decision to launch despite a failing check,
            recorded in the ledger as a process failure.
        dry_run: the static gates and the launch plan; nothing is trained or recorded.
        echo: called with each progress line; None: quiet.
        ledger: an open skillos.ledger.Ledger; None: the one at $SKILLOS_HOME, opened and closed.
    Returns:
        {plan, returncode, ...}: with `dry_run`, also `gates` (the Report); a local run, its
        steps and checkpoints; a matrix or seed replicates, `runs` (one summary per run).
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
        GateRefused: a launch gate failed and was not overridden (`.report` holds every check).
        SkillosError: no training section, a matrix on a backend other than local, or a launch
            that cannot start (e.g. modal not installed).
    """
    cfg = _config(config)
    if backend is not None:
        cfg = with_sets(cfg, [f"compute.backend={backend}"])
    if not cfg.training.is_set():
        raise SkillosError(f"{cfg.source or 'config'}: no training section; skillos train needs "
                           "training.* (see training/configs/cpu-smoke.yaml)")
    if cfg.matrix or cfg.experiment.seeds is not None:
        return _train_runs(cfg, overrides=overrides, dry_run=dry_run, echo=echo, ledger=ledger)
    plan = launch.plan(cfg, str(cfg.source or ""))
    if dry_run:  # nothing launched, no alert
        report = gates.preview(cfg, "train", overrides, echo, {"plan": plan})
        return {"plan": plan, "gates": report, "returncode": 0}  # gates: the Report
    echo = echo or _quiet
    with _ledger(ledger) as book:
        gates.enforce(cfg, "train", book, overrides, echo=echo)
        return {"plan": plan, **launch.launch(cfg, plan, book, echo)}


def _train_runs(cfg: Config, *, dry_run: bool, echo: Echo | None, **launch_args) -> dict:
    """A training matrix (or seed replicates): each run trained in turn into OUTPUT_DIR/LABEL, a
    run of the one experiment; rerunning resumes each from its newest checkpoint (a finished one
    has nothing left to do). `dry_run`: every run's launch plan, the gates on the first."""
    if not compute_of(cfg).in_process:  # its workers load the config file, which names the whole matrix
        raise SkillosError(f"{cfg.source or 'config'}: a matrix or experiment.seeds trains on compute.backend "
                           f"{IN_PROCESS} only; for {cfg.compute.backend}, write one config per run")
    base = training_output_dir(cfg)
    runs = [(r.label, with_sets(r.cfg, [f"training.output_dir={base / r.label}"])) for r in expand(cfg)]
    if dry_run:
        result = train(runs[0][1], dry_run=True, echo=echo)
        return {**result, "runs": {label: launch.plan(child, str(cfg.source or "")) for label, child in runs}}
    summaries = {}
    for i, (label, child) in enumerate(runs, 1):
        (echo or _quiet)(f"run {i}/{len(runs)} of {cfg.experiment.name}: {label}")
        summaries[label] = train(child, echo=echo, **launch_args)
        if summaries[label]["returncode"]:  # a run that failed stops the matrix: rerun to resume it
            break
    return {"plan": launch.plan(runs[0][1], str(cfg.source or "")), "runs": summaries,
            "returncode": max(s["returncode"] for s in summaries.values())}


def compare(config: Config | str | Path | None, runs: list, *, control: str | None = None,
            family: str | None = None, experiment=None, echo: Echo | None = None, ledger=None,
            per_configuration: bool = False) -> dict:
    """Recorded runs (ids or arm names) against a control, from the ledger: alpha, power,
    bootstrap and the control's max age come from the config (default: the schema's). The
    static gates run first; every arm carries its verdict from `evals.stats.verdicts`.

    Args:
        config: a Config or a path to one; None: the schema's defaults.
        runs: run ids or arm names (the newest measured run of each).
        control: the control's run id or arm; None: eval.control.arm.
        family: the experiment whose runs are corrected together as one family.
        experiment: an experiment id (#3 or 3) or name that arm names are looked up in.
        echo: called with each progress line; None: quiet.
        ledger: an open skillos.ledger.Ledger; None: the one at $SKILLOS_HOME, opened and closed.
        per_configuration: an imported results registry (evals/skillsbench.py) re-tested per
            configuration: `control` names the control condition, `family` the import; no runs.
    Returns:
        {control, family, arms, ...}: each arm's denominators, paired comparison (McNemar, or per
        unit for trials and scores, CI, MDE) and family-corrected verdict; per_configuration:
        {configurations: [...], mean_lift, family}.
    Raises:
        ConfigError: the config is unreadable or invalid (one line naming the key).
        GateRefused: a launch gate failed and was not overridden (`.report` holds every check).
        LedgerError: a run, arm or family not in the ledger, or an arm name that is ambiguous.
    """
    cfg = _config(config) if config is not None else validate(Config())
    gates.refuse_on_failure(gates.check(cfg, dry_run=False, echo=echo), "compare")
    if per_configuration:
        if runs or not family or not control:
            raise SkillosError("compare --per-configuration takes no arms: name the import with --family and the "
                               "control condition with --control (e.g. --control 'No Skills')")
        with _ledger(ledger) as book:
            return compare_configurations(book, family, control, alpha=cfg.eval.alpha, power=cfg.eval.power,
                                          n_boot=cfg.eval.bootstrap)
    if not runs:
        raise SkillosError("compare: name the arms to compare (or --per-configuration for an imported registry)")
    with _ledger(ledger) as book:
        return compare_runs(book, list(runs), control or cfg.eval.control.arm, alpha=cfg.eval.alpha,
                            power=cfg.eval.power, max_age_days=cfg.eval.control.max_age_days,
                            n_boot=cfg.eval.bootstrap, family=family, experiment=experiment,
                            worthwhile=cfg.experiment.expected_effect, max_error_rate=cfg.eval.max_error_rate)


def canary(trainer: str, *, credit: str | None = None, variant: str | None = None, quick: bool = False,
           out: str | Path | None = None, sets: list[str] | None = None, echo: Echo | None = None, ledger=None,
           tune: bool = False) -> dict:
    """The learning canary of `trainer` (curator, selector, optimize): trained before/after on
    held-out tasks beside a negative control, judged by evals/stats.py and recorded in the ledger
    with the code hash it vouches for. Returns the result (`passed`: improvement and a control
    that shows none). Runs on the CPU, on its own miniature: it launches nothing the gates guard.

    Args:
        trainer: a CANARIES entry (skillos/registry.py: curator, selector, optimize).
        credit: the selector's credit profile (its variants).
        variant: the variant, for a canary that has them (the curator's async: rollouts played ahead);
            `credit` and `variant` name the same choice, the selector's and everyone's.
        quick: the same pipeline at a size that runs in minutes; too small to learn.
        out: where the canary's files go; None: runs/canary-TRAINER-STAMP.
        sets: KEY=VALUE items saying where it runs (compute.backend local|ray, compute.ray_*,
            compute.gpu; ray: its trained run and its negative control as two Ray tasks); no
            other key, its miniature is fixed.
        echo: called with each progress line; None: quiet.
        ledger: an open skillos.ledger.Ledger; None: the one at $SKILLOS_HOME, opened and closed.
        tune: judge on the tuning split (env.seed's held-out games) instead of the sealed one
            (canary.sealed_seed's): no look is counted, and it vouches for nothing.
    Returns:
        The result: `passed` (the declared rule held: a pooled improvement, every seed up, no
        control improving), each seed's numbers, the held-out split with its looks, and the
        code hash it vouches for.
    Raises:
        SkillosError: an unknown trainer, a variant it does not have, or a set it does not take.
    """
    credit = _variant(trainer, credit, variant)
    canaries.compute_sets(sets)  # refused before the ledger opens
    _canary_extras(trainer, credit, quick, sets or [])
    with _ledger(ledger) as book:
        return canaries.run(trainer, variant=credit, quick=quick, out=out, ledger=book, echo=echo or _quiet,
                            sets=sets or (), tune=tune)


def _variant(trainer: str, credit: str | None, variant: str | None) -> str | None:
    """The one variant `--credit` (the selector's name for it) or `--variant` chose."""
    if credit is not None and variant is not None:
        raise SkillosError(f"canary {trainer}: --credit and --variant name the same choice; give one")
    option = canaries.canary(trainer).variant_option
    if credit is not None and option != "--credit":
        raise SkillosError(f"canary {trainer}: --credit is the selector's credit profile; this canary's variants "
                           f"are chosen with {option}")
    return credit if credit is not None else variant


def _canary_extras(trainer: str, credit: str | None, quick: bool, sets: list) -> None:
    """A canary's extras, checked as the gates check a launch's (gate 1's `extras`), before its
    folder, its ledger run or its game generation: a one-line error naming the install line."""

    chosen = canaries.canary(trainer)
    if credit is not None and credit not in chosen.variants:
        return  # run() says which variants it has
    resolved = with_sets(chosen.config(quick, credit), sets)
    for result in extras(Context(resolved)):
        if result.status == "FAIL":
            raise SkillosError(f"canary {trainer}: {result.key} needs what is not installed ({result.seen}); "
                               f"{result.detail}")


# -- helpers ------------------------------------------------------------------------------------
def _config(config) -> Config:
    if isinstance(config, Config):  # checked again: a notebook may have changed it since it loaded
        return revalidate(config)
    if isinstance(config, (str, Path)):
        return load_config(config)
    raise SkillosError(f"expected a Config or a path to a config file, got {type(config).__name__}")


def _quiet(_line: str) -> None:
    return None


def import_runs(files: list, *, experiment: str, mapping: str | Path | None = None, env: str | None = None,
                ledger=None, **columns) -> dict:
    """Per-game result files written by other tools (JSONL, inspect_ai logs, skill-creator
    benchmark.json) recorded as runs of `experiment`, one per arm, marked imported
    (evals/imported.py).

    Args:
        files: the result files.
        experiment: the experiment name to record them under (`compare(..., family=experiment)`).
        mapping: a mapping file; `columns` (game, success, arm, arms, trial, scorer, unit) override it.
        env: the environment the games were played in, for the record.
    Returns:
        {experiment_id, experiment, import, sources: {path: sha256}, runs: [{run_id, arm, denominators}]}.
    Raises:
        SkillosError: a file that cannot be read as mapped, with its name and line.
    """
    rules = Mapping.load(mapping, **columns)
    with _ledger(ledger) as book:
        return import_results(book, files, experiment, rules, book.path.parent, env)


@contextlib.contextmanager
def _ledger(ledger, needed: bool = True) -> Iterator:
    """The given ledger, or the one at $SKILLOS_HOME for the duration of the call."""
    if ledger is not None or not needed:
        yield ledger
        return

    with Ledger() as book:
        yield book


def _cluster(cfg: Config):
    """compute.backend ray: one Ray cluster joined for every run of a matrix (each run's arms are
    its tasks, the runs in turn); else nothing."""
    if not compute_of(cfg).distributes:
        return contextlib.nullcontext()

    return cluster(cfg)


WATCHED = "a process beside this launch (local, or the Ray driver), watching it and its output folder"


def _watching(cfg: Config, paths: list, ledger, echo: Echo):
    """Gate 7: the launch runs beside a watchdog process (ledger/watchdog.launch_watch) unless the
    config turns it off."""
    w = launch_watch(cfg, paths, WATCHED)
    if w is None:
        return contextlib.nullcontext()
    return watching(w["paths"], ledger.path, w["stall_minutes"], gpus=w["gpus"], echo=echo or _quiet,
                    after_minutes=w["after_minutes"])
