"""The `skillos` command: thin over the library. Parse, call, print (rich tables, or --json)."""

from __future__ import annotations

import contextlib
import json
import sys
from importlib import resources
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from skillos.cli_ledger import app as ledger_app
from skillos.errors import SkillosError

app = typer.Typer(
    help="skillos: research on agent skills (SKILL.md). Curate, optimize and evaluate skill repos "
    "on the real ALFWorld engine with paired statistics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
skills_app = typer.Typer(help="Validate and search skill repos (folders of NAME/SKILL.md).",
                         no_args_is_help=True)
gate_app = typer.Typer(help="The seven launch gates: check a config before spending compute.",
                       no_args_is_help=True)
app.add_typer(skills_app, name="skills")
app.add_typer(gate_app, name="gate")
app.add_typer(ledger_app, name="ledger")

# Every command that spends compute: each runs the launch gates first (tests/test_launch_gates.py
# checks that each one refuses a failing config).
LAUNCHERS = ("eval", "quickstart", "sweep", "train", "optimize")
OVERRIDE_HELP = ('CHECK="reason": launch despite a failing gate check; the override and its reason '
                 "are recorded in the ledger as a process failure (repeatable).")

out = Console()
err = Console(stderr=True)


def _print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")


@skills_app.command("validate")
def skills_validate(path: Path = typer.Argument(..., help="A SKILL.md file or a folder of skills.")):
    """Check frontmatter and names; one line per problem, exit 1 if any."""
    from skillos.repo import validate_path

    problems = validate_path(path)
    for problem in problems:
        typer.echo(problem)
    if problems:
        raise typer.Exit(1)
    typer.echo(f"{path}: valid")


@skills_app.command("export")
def skills_export(
    repo: Path = typer.Argument(..., help="A curated skill repo folder (NAME/SKILL.md ...)."),
    out: Path = typer.Argument(..., help="A new folder: the bundle, laid out as skills/NAME/SKILL.md."),
):
    """Lay a curated repo out as a bundle that `npx skills add OUT` installs (e.g. for Claude Code)."""
    from skillos.repo import SkillRepo
    from skillos.repo.skill import SkillError

    if not repo.is_dir():
        raise SkillosError(f"{repo}: no such skill repo folder")
    if out.exists() and any(out.iterdir()):
        raise SkillosError(f"{out}: exists and is not empty; export into a new folder")
    try:
        skills = SkillRepo.load(repo)
    except SkillError as exc:
        raise SkillosError(f"{repo}: {exc}") from None
    if not len(skills):
        raise SkillosError(f"{repo}: no skills to export")
    skills.copy(out / "skills")  # SKILL.md with single-line name and description: what the skills CLI parses
    typer.echo(f"exported {len(skills)} skills to {out / 'skills'}; install with: npx skills add {out}")


@skills_app.command("search")
def skills_search(
    folder: Path = typer.Argument(..., help="A skill repo folder."),
    query: str = typer.Argument(..., help="What the agent is about to do, e.g. a task sentence."),
    k: int = typer.Option(5, "-k", help="How many skills to return."),
    mode: str = typer.Option("bm25", help="bm25, or shuffled (k random skills: a control)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Top-k skills for a query, by BM25 over name + description + body."""
    from skillos.repo import SkillRepo, retrieve

    if not folder.is_dir():
        raise SkillosError(f"{folder}: no such skill repo folder")
    if mode not in ("bm25", "shuffled"):
        raise SkillosError(f"--mode {mode!r}: choose bm25 or shuffled")
    hits = retrieve(SkillRepo.load(folder), query, k, mode)
    if as_json:
        _print_json([{"name": h.skill.name, "score": h.score, "description": h.skill.description}
                     for h in hits])
        return
    if not hits:
        typer.echo("no skill matches")
    for h in hits:
        typer.echo(f"{h.score:7.3f}  {h.skill.name}  {h.skill.description}")


@gate_app.command("check")
def gate_check(
    config: Path = typer.Argument(..., help="Experiment or training config (YAML)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Also run the checks that execute code: "
                                 "tool surface, reward arithmetic, a few real rollouts, the task "
                                 "distribution, split hashes, free disk."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """PASS / WARN / FAIL / SKIP per check, with its gate, key, seen and expected values.

    Exit 0: nothing failed; 1: a check failed; 2: the config is unreadable. Static checks take
    well under a second and import nothing heavy.
    """
    from skillos import config as cfgmod
    from skillos import gates

    cfg = cfgmod.load(config)
    ledger = None
    if cfg.experiment.fixes_failure is not None:  # gate 6 looks the fix up in the ledger
        from skillos.ledger import Ledger

        ledger = Ledger()
    try:
        report = gates.check(cfg, dry_run=dry_run, ledger=ledger,
                             echo=None if as_json else typer.echo)
    finally:
        if ledger is not None:
            ledger.close()
    if as_json:
        _print_json(report.to_dict())
    else:
        typer.echo(f"{config}: {report.summary()}")
    raise typer.Exit(report.exit_code)


RESUME_HELP = "Continue the run in --out: finished games are not played again."
OVERWRITE_HELP = "Delete what is in --out and start over."


def _run(cfg, out_dir: Optional[Path], as_json: bool, command: str, overrides: List[str],
         resume: bool = False, overwrite: bool = False, after=None, show: bool = True) -> None:
    from skillos import gates
    from skillos.evals.experiment import check_out, default_out_dir
    from skillos.evals.report import render
    from skillos.ledger import Ledger
    from skillos.ledger.watchdog import watching

    overrides = gates.parse_overrides(overrides)
    if resume and overwrite:
        raise SkillosError("--resume and --overwrite exclude each other")
    if resume and out_dir is None:
        raise SkillosError("--resume needs the --out folder of the run to continue")
    out_dir = out_dir or default_out_dir(cfg)
    check_out(out_dir, resume, overwrite)  # before the gates spend time
    with Ledger() as ledger:  # $SKILLOS_HOME/ledger.db: every gate result and eval records itself
        gates.enforce(cfg, command, ledger, overrides, echo=_echo_err)
        watch = (watching([out_dir], ledger.path, cfg.compute.stall_minutes, echo=_echo_err)
                 if cfg.compute.watchdog else contextlib.nullcontext())
        with watch:
            result = _run_with_progress(cfg, out_dir, ledger, resume, overwrite)
    if after is not None:  # a command's own summary, added to the report
        after(result, out_dir)
    if not show:  # the caller prints one report for several runs (sweep --env, both directions)
        return
    if as_json:
        _print_json(result)
    else:
        render(result, out)


def _echo_err(line: str) -> None:
    typer.echo(line, err=True)  # one unwrapped line each: agents grep these


def _run_with_progress(cfg, out_dir: Path, ledger, resume: bool, overwrite: bool) -> dict:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from skillos.evals.experiment import run_eval

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=False) as bar:
        tasks = {}

        def progress(arm, phase, done, total, live=""):
            key = (arm, phase)
            label = f"generating {phase} games" if arm == "generate" else f"{arm} · {phase} games"
            if key not in tasks:
                tasks[key] = bar.add_task(label, total=total)
            bar.update(tasks[key], completed=done,
                       description=f"{label} · {live}" if live else label)

        return run_eval(cfg, out_dir, progress, ledger=ledger, resume=resume, overwrite=overwrite)


@app.command("eval")
def eval_cmd(
    config: Path = typer.Argument(..., help="Experiment config (YAML)."),
    n_games: Optional[int] = typer.Option(None, help="Override env.n_games (held-out games per arm)."),
    n_train_games: Optional[int] = typer.Option(None, help="Override env.n_train_games."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Output folder (default runs/NAME-TIME)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    override: List[str] = typer.Option([], "--override", help=OVERRIDE_HELP),
    resume: bool = typer.Option(False, "--resume", help=RESUME_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_HELP),
):
    """Run every arm of CONFIG on the same held-out games and print the paired comparison.

    The launch gates run first (static and dry-run) and refuse a failing config."""
    from skillos import config as cfgmod

    cfg = cfgmod.load(config)
    _apply_overrides(cfg, n_games, n_train_games)
    _run(cfg, out_dir, as_json, "eval", override, resume, overwrite)


@app.command("quickstart")
def quickstart(
    n_games: Optional[int] = typer.Option(None, help="Held-out games per arm (default 60)."),
    n_train_games: Optional[int] = typer.Option(None, help="Train games to curate from (default 60)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Output folder (default runs/quickstart-TIME)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    override: List[str] = typer.Option([], "--override", help=OVERRIDE_HELP),
    resume: bool = typer.Option(False, "--resume", help=RESUME_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_HELP),
):
    """The main job: no_memory vs closed_loop on held-out ALFWorld games, no API key, CPU only.

    A heuristic executor plays generated ALFWorld games (real TextWorld engine); a heuristic
    curator writes SKILL.md files from train games, then keeps curating on held-out games.
    Prints success per arm and task type with denominators, the exact McNemar p, a paired
    bootstrap 95% CI and the minimum detectable effect. Same as `skillos eval` on
    evals/configs/quickstart.yaml, launch gates included.
    """
    from skillos import config as cfgmod

    with resources.as_file(resources.files("skillos.evals") / "configs" / "quickstart.yaml") as path:
        cfg = cfgmod.load(path)
    _apply_overrides(cfg, n_games, n_train_games)
    _run(cfg, out_dir, as_json, "quickstart", override, resume, overwrite)


@app.command("sweep")
def sweep_cmd(
    config: Path = typer.Argument(..., help="Experiment config (YAML): games, control, statistics."),
    repo: List[Path] = typer.Option([], "--repo", help="A skill repo folder to evaluate, e.g. one "
                                    "per checkpoint (repeatable; a number in its name is its step)."),
    checkpoint: List[Path] = typer.Option([], "--checkpoint", help="A trained curator checkpoint: it "
                                          "curates its own repo from empty, on curator.backend hf or "
                                          "vllm (repeatable; a number in its name is its step)."),
    executor: str = typer.Option(..., "--executor", help="The target executor: heuristic or "
                                 "BACKEND:MODEL, BACKEND one of openai, anthropic, hf, vllm."),
    n_games: Optional[int] = typer.Option(None, help="Override env.n_games."),
    n_train_games: Optional[int] = typer.Option(None, help="Override env.n_train_games (the "
                                                "gates check the held-out games against them)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Output folder (default runs/NAME-sweep-TIME)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    override: List[str] = typer.Option([], "--override", help=OVERRIDE_HELP),
    resume: bool = typer.Option(False, "--resume", help=RESUME_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help=OVERWRITE_HELP),
    env: List[str] = typer.Option([], "--env", help="A target environment (household, reasoning) to "
                                  "evaluate on, with its own control in the same sweep; repeat it for "
                                  "both directions of a cross-domain transfer, Holm-corrected together."),
):
    """Several skill repos or curator checkpoints on one target executor, with a fresh control in the same run.

    Prints the family-corrected table, the best repo with the selection caveat, and writes
    lift-vs-step with 95% CIs as sweep.png. Lift on one executor does not predict lift on
    another: the target executor is required.
    """
    from skillos import config as cfgmod
    from skillos.evals import sweep
    from skillos.repo.store import write_atomic

    base = cfgmod.load(config)
    targets = list(dict.fromkeys(env)) or [base.env.name]
    configs = [sweep.sweep_config(base, list(repo), executor, list(checkpoint), target) for target in targets]
    for cfg in configs:
        _apply_overrides(cfg, n_games, n_train_games)
    if len(configs) > 1:  # one sub-folder per target environment
        from skillos.evals.experiment import default_out_dir

        out_dir = out_dir or default_out_dir(configs[0])
    summaries = {}

    def summarize(result, out):
        summary = sweep.summarize(result, sweep.sources_of(cfg))
        summary["png"] = sweep.plot(summary, Path(out) / "sweep.png")
        summary["family"] = sweep.family_table({cfg.env.name: summary}, cfg.eval.alpha)
        summaries[cfg.env.name] = summary
        result["sweep"] = summary
        write_atomic(Path(out) / "sweep.json", json.dumps(summary, indent=1))
        if not as_json and len(configs) == 1:
            for r in summary["rows"]:
                diff = "unmeasured" if r["difference"] is None else f"{100 * r['difference']:+.1f} pts"
                holm = "unmeasured" if r["p_adjusted"] is None else f"{r['p_adjusted']:.3g}"
                mde = "unmeasured" if r["mde"] is None else f"{100 * r['mde']:.1f} pts"
                err.print(f"step {r['step']:>6} {r['repo']}: {diff} (Holm p {holm}, MDE {mde}, "
                          f"paired n={r['n_paired']})", markup=False, highlight=False)
            if summary["best"]:
                err.print(f"best of held-out: {summary['best']} — {summary['caveat']}", markup=False)
            err.print(f"lift vs step: {summary['png']}", markup=False, highlight=False)

    for cfg in configs:
        where = out_dir / cfg.env.name if len(configs) > 1 else out_dir
        _run(cfg, where, as_json and len(configs) == 1, "sweep", override, resume, overwrite, after=summarize,
             show=len(configs) == 1)
    if len(configs) > 1:  # both directions, one family
        family = sweep.family_table(summaries, base.eval.alpha)
        write_atomic(out_dir / "transfer.json", json.dumps(family, indent=1))
        if as_json:
            _print_json({"transfer": family, "sweeps": summaries})
        for r in [] if as_json else family["rows"]:
            p = "unmeasured" if r["p_family"] is None else f"{r['p_family']:.3g}"
            diff = "unmeasured" if r["difference"] is None else f"{100 * r['difference']:+.1f} pts"
            err.print(f"{r['source_env'] or '?'} -> {r['target_env']} {r['repo']}: {diff} vs its control "
                      f"(Holm p over {family['family_size']} comparisons {p}, paired n={r['n_paired']})",
                      markup=False, highlight=False, soft_wrap=True)  # one line each: agents grep these


@app.command("compare")
def compare_cmd(
    runs: List[str] = typer.Argument(..., help="Arms to compare: ledger run ids, or arm names "
                                     "(the newest measured run of that arm)."),
    control: str = typer.Option("no_memory", "--control", help="The control: a run id or an arm name."),
    family: Optional[str] = typer.Option(None, "--family", help="Experiment name whose every measured "
                                         "run forms the family (default: the compared runs' experiments)."),
    alpha: float = typer.Option(0.05, help="Family-wise significance level."),
    max_age_days: float = typer.Option(7.0, help="A control older than this is stale (gate 4)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Arms vs a control from the ledger: paired on common games, Holm over the whole family.

    Calls a difference an improvement only if the control is fresh and on the same executor,
    the denominators agree, and it survives Holm correction over every arm recorded in the
    same experiments. Always prints the MDE. Exit 0 either way: a refusal is a verdict.
    """
    from skillos.evals.compare import compare_runs
    from skillos.ledger import Ledger

    with Ledger() as ledger:
        result = compare_runs(ledger, list(runs), control, alpha=alpha, max_age_days=max_age_days,
                              family=family)
    if as_json:
        _print_json(result)
        return
    c = result["control"]
    d = c["denominators"]
    typer.echo(f"control run #{c['run_id']} ({c['arm']}, {c['age_days']:.1f} days old): "
               f"{d['successes']}/{d['measured']} measured of {d['attempted']} common games "
               f"({d['unmeasured']} unmeasured, {d['coerced_actions']} coerced actions)")
    scope = result["family"]["name"] or "of the compared runs' experiments"
    typer.echo(f"family {scope}: "
               f"{result['family']['size']} run(s) {result['family']['runs']}, "
               f"Holm-corrected at alpha {result['alpha']}")
    for arm in result["arms"]:
        d, k = arm["denominators"], arm["comparison"]
        diff = "unmeasured" if k["difference"] is None else f"{100 * k['difference']:+.1f} pts"
        mde = "unmeasured" if k["mde"] is None else f"{100 * k['mde']:.1f} pts"
        p = "unmeasured" if k["p_value"] is None else f"{k['p_value']:.3g}"
        typer.echo(f"run #{arm['run_id']} ({arm['arm']}): {d['successes']}/{d['measured']} measured "
                   f"of {d['attempted']} ({d['unmeasured']} unmeasured, {d['coerced_actions']} "
                   f"coerced); paired n={k['n_paired']} (dropped {k['n_dropped']}); diff {diff}; "
                   f"b/c {k['b']}/{k['c']}; McNemar p {p}, Holm {k['p_holm']:.3g}, BH {k['p_bh']:.3g}; "
                   f"MDE {mde}")
        verdict = "IMPROVEMENT" if arm["improvement"] else "not an improvement: " + "; ".join(arm["why_not"])
        typer.echo(f"  verdict: {verdict}")


@app.command("postmortem")
def postmortem_cmd(
    experiment: Optional[int] = typer.Argument(None, help="Experiment id (default: everything)."),
    run: Optional[int] = typer.Option(None, help="One run instead of an experiment."),
    since: Optional[str] = typer.Option(None, help="Only records since this date (YYYY-MM-DD)."),
    out_file: Optional[Path] = typer.Option(None, "--out", help="Write the markdown here."),
):
    """A markdown postmortem generated from the ledger.

    Timeline, failures by category and mode, cost, what each gate did, overrides and open items.
    """
    import datetime as dt

    from skillos.ledger import Ledger
    from skillos.ledger.postmortem import postmortem
    from skillos.repo.store import write_atomic

    if since:
        try:
            dt.date.fromisoformat(since[:10])
        except ValueError:
            raise SkillosError(f"--since {since!r}: expected a date like 2026-11-29") from None
    with Ledger() as ledger:
        text = postmortem(ledger, experiment, run, since)
    if out_file:
        write_atomic(out_file, text)
        typer.echo(f"postmortem written to {out_file}")
    else:
        sys.stdout.write(text)


@app.command("watch")
def watch(
    pid: List[int] = typer.Option([], "--pid", help="A process of the job (repeatable)."),
    path: List[Path] = typer.Option([], "--path", help="A log or checkpoint folder that should grow."),
    stall_minutes: float = typer.Option(15.0, help="No growth (or an idle device) this long is a stall."),
    idle_minutes: float = typer.Option(10.0, help="An idle box this long after the job ends alarms."),
    busy_percent: float = typer.Option(10.0, help="GPU (or CPU) use below this counts as idle."),
    gpus: int = typer.Option(0, help="GPUs on the box, to cost an idle box in GPU-hours."),
    interval: float = typer.Option(60.0, help="Seconds between looks."),
    max_ticks: Optional[int] = typer.Option(None, help="Stop after this many looks."),
):
    """Gate 7: watch the box, not the job.

    Alarms go to stdout and the ledger; stops when the job has ended and the box has been idle
    for --idle-minutes.
    """
    from skillos.ledger import Ledger
    from skillos.ledger.watchdog import Watchdog, WatchConfig

    if not pid and not path:
        raise SkillosError("watch needs at least one --pid or --path")
    config = WatchConfig(list(pid), [str(p) for p in path], stall_minutes, idle_minutes,
                         busy_percent, gpus)
    with Ledger() as ledger:
        alarms = Watchdog(config, ledger=ledger, echo=typer.echo).run(interval, max_ticks)
    recorded = sum(a.kind != "process-exited" for a in alarms)
    typer.echo(f"watch ended: {len(alarms)} alarm(s), {recorded} recorded as failures in {ledger.path}")


@app.command("train")
def train_cmd(
    config: Path = typer.Argument(..., help="Training config (YAML), e.g. training/configs/cpu-smoke.yaml."),
    backend: Optional[str] = typer.Option(None, "--backend", help="Override compute.backend: local, "
                                          "accelerate or modal."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Run the static gates and print the launch "
                                 "it would make; train nothing."),
    override: List[str] = typer.Option([], "--override", help=OVERRIDE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the summary (or the plan) as JSON."),
):
    """Train the curator with GRPO (SkillOS Algorithm 1) on the real ALFWorld engine.

    The launch gates run first (static and dry-run) and refuse a failing config. Every step
    prints the reward-health line; every checkpoint is archived and recorded in the ledger; a
    rerun resumes from the newest complete checkpoint in training.output_dir."""
    from skillos import config as cfgmod
    from skillos import gates
    from skillos.ledger import Ledger
    from skillos.ledger.watchdog import watching
    from skillos.training import launch

    cfg = cfgmod.load(config)
    if backend is not None:
        cfg.compute.backend = backend
        cfgmod.validate(cfg)
    if not cfg.training.is_set():
        raise SkillosError(f"{config}: no training section; skillos train needs training.* (see "
                           "training/configs/cpu-smoke.yaml)")
    overrides = gates.parse_overrides(override)
    plan = launch.plan(cfg, str(config))
    if dry_run:
        report = gates.check(cfg, dry_run=False, echo=None if as_json else _echo_err)
        if as_json:
            _print_json({"plan": plan, "gates": report.to_dict()})
        else:
            typer.echo(launch.render(plan))
            typer.echo(f"{config}: {report.summary()}")
        raise typer.Exit(report.exit_code)
    from skillos.training.trainer import output_dir, train

    with Ledger() as ledger:
        gates.enforce(cfg, "train", ledger, overrides, echo=_echo_err)
        if cfg.compute.backend == "modal":
            raise typer.Exit(launch.launch_modal(plan))
        if cfg.compute.backend == "accelerate":
            import subprocess

            raise typer.Exit(subprocess.run(plan["command"]).returncode)
        watch = (watching([output_dir(cfg)], ledger.path, cfg.compute.stall_minutes, echo=_echo_err)
                 if cfg.compute.watchdog else contextlib.nullcontext())
        with watch, contextlib.redirect_stdout(sys.stderr):  # TRL logs to stdout; stdout is the report's
            summary = train(cfg, ledger, echo=_echo_err)
    if as_json:
        _print_json(summary)
    else:
        typer.echo(f"trained {len(summary['steps'])} steps; checkpoints: {', '.join(summary['checkpoints']) or 'none'}")


@app.command("doctor")
def doctor_cmd(
    config: Optional[Path] = typer.Option(None, "--config", help="Also check this config's backends: keys "
                                          "present, endpoint answering, model listed or weights found."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Is this machine ready? Extras, the ALFWorld engine and cached games, the ledger, disk, GPU,
    npx for the skill bundles, and (with --config) the backends; each with what to do about it.
    Exit 1 if anything needed is broken."""
    from skillos import config as cfgmod
    from skillos import doctor

    checks = doctor.run(cfgmod.load(config) if config else None)
    failed = [c for c in checks if c.status == "fail"]
    if as_json:
        _print_json({"ready": not failed, "checks": [c.to_dict() for c in checks]})
    else:
        for check in checks:
            typer.echo(check.line())
        typer.echo(f"{len(checks)} checks: {len(checks) - len(failed)} ok or optional, {len(failed)} failed")
    raise typer.Exit(1 if failed else 0)


@app.command("optimize")
def optimize_cmd(
    config: Path = typer.Argument(..., help="Config with an optimize section, e.g. "
                                  "training/configs/optimize-quickstart.yaml."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Output folder (default runs/NAME-TIME)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    override: List[str] = typer.Option([], "--override", help=OVERRIDE_HELP),
):
    """Optimize the skill text for a frozen executor (SkillOpt-style), gated and sealed.

    Each step plays a train minibatch, the optimizer proposes at most the step's budget of edits
    (the textual learning rate), and the candidate is kept only if the gate accepts it on the
    validation split (paired: mean difference > k·SE). An A/A test refuses a gate that accepts a
    copy of the seed. The sealed test split is read once, at the end: seed vs best, corrected for
    every candidate tried. Writes best_skill/, history.jsonl, rejected.json, report.json."""
    from skillos import config as cfgmod
    from skillos import gates
    from skillos.evals.experiment import check_out, default_out_dir
    from skillos.ledger import Ledger
    from skillos.training.optimize import preflight, run

    cfg = cfgmod.load(config)
    overrides = gates.parse_overrides(override)
    out_dir = out_dir or default_out_dir(cfg)
    check_out(out_dir)
    preflight(cfg)  # bad splits or seed skills: refused before the gates play anything
    with Ledger() as ledger:
        gates.enforce(cfg, "optimize", ledger, overrides, echo=_echo_err)
        report = run(cfg, out_dir, ledger, echo=_echo_err)
    if as_json:
        _print_json(report)
        return
    c = report["comparison"]
    for arm in ("seed", "best"):
        a = report[arm]
        rate = "unmeasured" if a["success_rate"] is None else f"{a['success_rate']:.1%}"
        typer.echo(f"{arm}: {a['successes']}/{a['measured']} measured of {a['attempted']} sealed test games "
                   f"({rate}; {a['unmeasured']} unmeasured)")
    if c["difference"] is not None:
        typer.echo(f"best - seed: {c['difference']:+.1%}, b/c = {c['b']}/{c['c']}, 95% CI "
                   f"[{c['ci_low']:+.1%}, {c['ci_high']:+.1%}], n = {c['n_paired']}")
    typer.echo(f"verdict: {report['verdict']}")
    typer.echo(f"best skills: {report['best_skill']} ({report['best_skills']} skills)")


def _apply_overrides(cfg, n_games, n_train_games) -> None:
    from skillos import config as cfgmod

    if n_games is not None:
        cfg.env.n_games = n_games
    if n_train_games is not None:
        cfg.env.n_train_games = n_train_games
    cfgmod.validate(cfg)


def main() -> None:
    """Console entry point: user mistakes are one line on stderr and a non-zero exit.

    Click handles its own usage errors (exit 2 with usage); everything a command raises as a
    SkillosError lands here instead of as a traceback."""
    try:
        app()
    except SkillosError as exc:
        sys.stderr.write(f"error: {exc}\n")  # one line, never wrapped
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
