"""The `skillos` command: parse, call ONE function of the public API (skillos.api), render.

The gates, the ledger, the watchdog and every verdict live in the library; a notebook or an
agent calling `skillos.evaluate(...)` gets exactly what `skillos eval` does.

The CLI modules (cli_*.py) import the library inside each command, the one place skillos imports
its own modules lazily: `skillos --help` and a command's parse error load none of it (0.2 s, not
0.6 s with the library loaded), and a command loads what it runs. Everywhere else imports are at
the top; heavy optional libraries (torch, trl, transformers, datasets, ray, vllm) load where used.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from skillos.cli_common import (JSON, OUT, OVERRIDE, OVERWRITE, RESUME, SET, ProgressBars, console, echo_err, emit,
                                end_on_sigterm, load_config, resumable)
from skillos.cli_config import app as config_app
from skillos.cli_models import app as models_app
from skillos.cli_gate import gate_app
from skillos.cli_export import app as export_app
from skillos.cli_ledger import app as ledger_app
from skillos.cli_import import import_cmd
from skillos.cli_ops import OPS_COMMANDS
from skillos.cli_plan import approve_cmd, plan_cmd
from skillos.cli_skills import skills_app
from skillos.cli_slate import app as slate_app
from skillos.cli_sleep import app as sleep_app
from skillos.cli_view import app as view_app
from skillos.errors import SkillosError
from skillos.registry import ENVIRONMENTS

app = typer.Typer(
    help="skillos: research on agent skills (SKILL.md). Curate, optimize and evaluate skill repos "
    "on the real ALFWorld engine with paired statistics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from skillos import __version__

        typer.echo(f"skillos {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print the installed skillos version and exit.",
                                       callback=_version, is_eager=True)) -> None:
    """skillos: research on agent skills (SKILL.md)."""


app.add_typer(skills_app, name="skills")
app.add_typer(gate_app, name="gate")
app.add_typer(ledger_app, name="ledger")
app.add_typer(sleep_app, name="sleep")
app.add_typer(view_app, name="view")
app.add_typer(export_app, name="export")
app.add_typer(slate_app, name="slate")
app.add_typer(config_app, name="config")
app.add_typer(models_app, name="models")

# Every command that spends compute: each API call runs the launch gates first
# (tests/test_launch_gates.py and tests/test_api.py check that each one refuses a failing config).
LAUNCHERS = ("eval", "quickstart", "sweep", "train", "optimize")

out = console()
err = console(stderr=True)


def _overrides(values: List[str]) -> dict:
    from skillos import gates

    return gates.parse_overrides(values)


def _show_eval(result: dict, as_json: bool) -> None:
    from skillos.cli_render import eval_tables, matrix_lines

    if "matrix" in result:  # the runs of a matrix or of seed replicates, judged as one family
        emit(result, as_json, lambda r: matrix_lines(r["matrix"]))
        return
    emit(result, as_json, show=lambda r: eval_tables(r, out))


def _on_stderr(lines: list[str], soft_wrap: bool) -> None:
    for line in lines:
        err.print(line, markup=False, highlight=False, soft_wrap=soft_wrap)  # agents grep these


def _evaluate(cfg, out_dir: Optional[Path], override: List[str], resume: bool, overwrite: bool, as_json: bool,
              **command) -> None:
    """What `eval` and `quickstart` share once the config is loaded: the run, under progress
    bars and a Ctrl-C that prints how to resume, then the report."""
    from skillos import api
    from skillos.evals.run_folder import default_out_dir

    out_dir = out_dir or default_out_dir(cfg)
    end_on_sigterm()  # kill PID: the eval's runs end as interrupted in the ledger, not "running"
    with resumable(out_dir), ProgressBars() as bars:
        result = api.evaluate(cfg, out=out_dir, overrides=_overrides(override), resume=resume,
                              overwrite=overwrite, progress=bars, echo=echo_err, **command)
    _show_eval(result, as_json)


@app.command("eval")
def eval_cmd(
    config: Path = typer.Argument(..., help="Experiment config (YAML)."),
    n_games: Optional[int] = typer.Option(None, help="Set env.n_games (held-out games per arm)."),
    n_train_games: Optional[int] = typer.Option(None, help="Set env.n_train_games."),
    out_dir: Optional[Path] = OUT,
    as_json: bool = JSON,
    override: List[str] = OVERRIDE,
    set_: List[str] = SET,
    resume: bool = RESUME,
    overwrite: bool = OVERWRITE,
):
    """Run every arm of CONFIG on the same held-out games and print the paired comparison.

    The launch gates run first (static and dry-run) and refuse a failing config."""
    _evaluate(load_config(config, set_, n_games, n_train_games), out_dir, override, resume, overwrite, as_json)


@app.command("quickstart")
def quickstart(
    n_games: Optional[int] = typer.Option(None, help="Held-out games per arm (default 60)."),
    n_train_games: Optional[int] = typer.Option(None, help="Train games to curate from (default 60)."),
    out_dir: Optional[Path] = OUT,
    as_json: bool = JSON,
    override: List[str] = OVERRIDE,
    set_: List[str] = SET,
    resume: bool = RESUME,
    overwrite: bool = OVERWRITE,
):
    """The main job: no_memory vs closed_loop on held-out ALFWorld games, no API key, CPU only.

    A heuristic executor plays generated ALFWorld games (real TextWorld engine); a heuristic
    curator writes SKILL.md files from train games, then keeps curating on held-out games.
    Prints success per arm and task type with denominators, the exact McNemar p, a paired
    bootstrap 95% CI, the minimum detectable effect and the verdict. Same as `skillos eval` on
    evals/configs/quickstart.yaml, launch gates included.
    """
    with resources.as_file(resources.files("skillos.evals") / "configs" / "quickstart.yaml") as path:
        cfg = load_config(path, set_, n_games, n_train_games)
    _evaluate(cfg, out_dir, override, resume, overwrite, as_json, command="quickstart")


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
    n_games: Optional[int] = typer.Option(None, help="Set env.n_games."),
    n_train_games: Optional[int] = typer.Option(None, help="Set env.n_train_games (the gates check "
                                                "the held-out games against them)."),
    out_dir: Optional[Path] = OUT,
    as_json: bool = JSON,
    override: List[str] = OVERRIDE,
    set_: List[str] = SET,
    resume: bool = RESUME,
    overwrite: bool = OVERWRITE,
    env: List[str] = typer.Option([], "--env", help=f"A target environment ({', '.join(ENVIRONMENTS.names())}) to "
                                  "evaluate on, with its own control in the same sweep; repeat it for "
                                  "both directions of a cross-domain transfer, Holm-corrected together."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan: the arms, under sweep.serve: "
                                 "adapters the vLLM server command and its adapters, and the expected wall "
                                 "time; nothing is started or played."),
):
    """Several skill repos or curator checkpoints on one target executor, with a fresh control in the same run.

    Prints the family-corrected table with each row's verdict, the best repo with the selection
    caveat, and writes lift-vs-step with 95% CIs as sweep.png. Lift on one executor does not
    predict lift on another: the target executor is required.
    """
    from skillos import api
    from skillos.cli_render import sweep_lines, transfer_lines

    cfg = load_config(config, set_, n_games, n_train_games)
    if dry_run:
        from skillos.cli_render import sweep_plan_lines

        result = api.sweep(cfg, executor=executor, repos=list(repo), checkpoints=list(checkpoint), envs=list(env),
                           dry_run=True)
        emit(result, as_json, sweep_plan_lines)
        return
    with ProgressBars() as bars:
        result = api.sweep(cfg, executor=executor, repos=list(repo), checkpoints=list(checkpoint),
                           envs=list(env), out=out_dir, overrides=_overrides(override), resume=resume,
                           overwrite=overwrite, progress=bars, echo=echo_err)
    if "matrix" in result:  # a sweep of every run of a matrix (or seeds): one family, the peaks' spread
        _show_eval(result, as_json)
        return
    if "transfer" in result:  # both directions of a cross-domain sweep, one family
        emit(result, as_json, show=lambda r: _on_stderr(transfer_lines(r["transfer"]), soft_wrap=True))
        return
    if not as_json:  # the sweep's table on stderr, above the eval report on stdout
        _on_stderr(sweep_lines(result["sweep"]), soft_wrap=False)
    _show_eval(result, as_json)


@app.command("compare")
def compare_cmd(
    runs: Optional[List[str]] = typer.Argument(None, help="Arms to compare: arm names (the newest measured run of "
                                               "that arm), or ledger run ids written #ID (a bare 3 is arm '3')."),
    control: Optional[str] = typer.Option(None, "--control", help="The control: an arm name or a run id "
                                          "written #ID (default: eval.control)."),
    family: Optional[str] = typer.Option(None, "--family", help="Experiment name whose every measured "
                                         "run forms the family (default: the compared runs' experiments)."),
    experiment: Optional[str] = typer.Option(None, "--experiment", help="Look arm names up in this experiment "
                                             "(an id, or a name); an arm name measured in several experiments "
                                             "is refused without it."),
    config: Optional[Path] = typer.Option(None, "--config", help="Take alpha, power, bootstrap and "
                                          "eval.control.max_age_days from this config."),
    alpha: Optional[float] = typer.Option(None, help="Set eval.alpha (family-wise significance level)."),
    max_age_days: Optional[float] = typer.Option(None, help="Set eval.control.max_age_days: an older "
                                                 "control is stale (gate 4)."),
    per_configuration: bool = typer.Option(False, "--per-configuration", help="An imported results registry "
                                           "(SkillsBench-style): per configuration, each condition against --control "
                                           "(a condition), mean scores on the source's scale, Holm over the "
                                           "configurations of --family."),
    set_: List[str] = SET,
    as_json: bool = JSON,
):
    """Arms vs a control from the ledger: paired on common games, Holm over the whole family.

    Each arm's verdict (improvement / not detected / regression / not reportable) comes from
    the one verdict function: improvement only if the control is fresh and on the same
    executor, the denominators agree, and it survives Holm over every arm recorded in the same
    experiments. Always prints the MDE. Exit 0 either way: a refusal is a verdict.
    """
    from skillos import api
    from skillos.config.loading import validate, with_sets
    from skillos.config.schema import Config
    from skillos.cli_render import compare_lines, configuration_lines

    sets = list(set_) + ([f"eval.alpha={alpha}"] if alpha is not None else []) + (
        [f"eval.control.max_age_days={max_age_days}"] if max_age_days is not None else [])
    cfg = load_config(config, sets) if config else with_sets(validate(Config()), sets)
    result = api.compare(cfg, list(runs or []), control=control, family=family, experiment=experiment,
                         per_configuration=per_configuration)
    emit(result, as_json, configuration_lines if per_configuration else compare_lines)


@app.command("train")
def train_cmd(
    config: Path = typer.Argument(..., help="Training config (YAML), e.g. training/configs/cpu-smoke.yaml."),
    backend: Optional[str] = typer.Option(None, "--backend", help="Set compute.backend: local, "
                                          "accelerate or modal."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Run the static gates and print the launch "
                                 "it would make; train nothing."),
    override: List[str] = OVERRIDE,
    set_: List[str] = SET,
    as_json: bool = JSON,
):
    """Train the curator with GRPO (SkillOS Algorithm 1) on the real ALFWorld engine.

    The launch gates run first (static and dry-run) and refuse a failing config. Every step
    prints the reward-health line; every checkpoint is archived and recorded in the ledger; a
    rerun resumes from the newest complete checkpoint in training.output_dir."""
    from skillos import api
    from skillos.cli_render import launch_lines, train_lines

    cfg = load_config(config, list(set_) + ([f"compute.backend={backend}"] if backend else []))
    overrides = _overrides(override)
    if dry_run:
        runs = {}
        try:
            result = api.train(cfg, dry_run=True, echo=None if as_json else echo_err)
            plan, report, runs = result["plan"], result["gates"], result.get("runs", {})
        except api.GateRefused as refused:
            plan, report = refused.detail["plan"], refused.report
        emit({"plan": plan, "gates": report.to_dict(), **({"runs": runs} if runs else {})}, as_json,
             lambda _: launch_lines(plan) + [f"run {label}: {' '.join(p['command'])}" for label, p in runs.items()]
             + [f"{config}: {report.summary()}"])
        raise typer.Exit(report.exit_code)
    summary = api.train(cfg, overrides=overrides, echo=echo_err)
    emit(summary, as_json, train_lines)
    raise typer.Exit(summary["returncode"])


@app.command("optimize")
def optimize_cmd(
    config: Path = typer.Argument(..., help="Config with an optimize section, e.g. "
                                  "training/configs/optimize-quickstart.yaml."),
    out_dir: Optional[Path] = OUT,
    as_json: bool = JSON,
    override: List[str] = OVERRIDE,
    set_: List[str] = SET,
    resume: bool = RESUME,
    unseal: Optional[str] = typer.Option(None, "--unseal", help='"reason": read a test split the '
                                         "ledger has sealed for this experiment (a person's call; recorded)."),
):
    """Optimize the skill text for a frozen executor (SkillOpt-style), gated and sealed.

    Each step plays a train minibatch, the optimizer proposes at most the step's budget of edits
    (the textual learning rate), and the candidate is kept only if the gate accepts it on the
    validation split (paired: mean difference > k·SE). An A/A test refuses a gate that accepts a
    copy of the seed, and the smallest gain the gate can accept is printed before any candidate.
    The sealed test split is read once per experiment (sealed in the ledger), at the end: seed vs
    best, judged in the family of every candidate tried. Writes best_skill/, history.jsonl,
    rejected.json, state.json, report.json."""
    from skillos import api
    from skillos.cli_render import optimize_lines

    report = api.optimize(load_config(config, set_), out=out_dir, overrides=_overrides(override),
                          resume=resume, unseal=unseal, echo=echo_err)
    emit(report, as_json, optimize_lines)


for _name, _command in OPS_COMMANDS.items():  # postmortem, watch, doctor: read-only, no API call
    app.command(_name)(_command)
app.command("import")(import_cmd)  # other tools' per-game results as ledger runs
app.command("plan")(plan_cmd)  # approval before compute: an agent proposes ...
app.command("approve")(approve_cmd)  # ... a person approves, at a terminal


def main() -> None:
    """Console entry point: user mistakes are one line on stderr and a non-zero exit.

    Click handles its own usage errors (exit 2 with usage); everything a command raises as a
    SkillosError lands here instead of as a traceback, with its own exit code (2: a mistake in
    the input; 1: refused by a gate; 3: an arm aborted on an outage)."""
    import sqlite3

    sys.excepthook = _redacted_excepthook  # a bug's traceback still shows, without any key
    try:
        app()
    except SkillosError as exc:
        sys.stderr.write(f"error: {exc}\n")  # one line, never wrapped
        sys.exit(exc.exit_code)
    except sqlite3.DatabaseError as exc:  # a damaged ledger page surfaces on any query
        from skillos.ledger import default_path

        sys.stderr.write(f"error: {default_path()}: the ledger is damaged ({exc}); move it away or "
                         "point SKILLOS_HOME elsewhere (sqlite3 .recover can salvage rows)\n")
        sys.exit(2)
    except OSError as exc:  # a path that is a file, a folder, unwritable, a full disk: one line
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"error: {where}{exc.strerror or exc}\n")
        sys.exit(2)


def _redacted_excepthook(kind, value, tb) -> None:
    import traceback

    from skillos.secrets import redact_text

    sys.stderr.write(redact_text("".join(traceback.format_exception(kind, value, tb))))


if __name__ == "__main__":
    main()
