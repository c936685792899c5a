"""Commands that read the ledger or the machine and spend no compute: postmortem, watch
(gate 7 beside a job), doctor. Registered as top-level commands by cli.py (OPS_COMMANDS)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from skillos.cli_common import JSON, OUT, OUT_FILE, SET, emit, end_on_sigterm, load_config
from skillos.errors import SkillosError
from skillos.registry import CANARIES


def postmortem_cmd(
    experiment: Optional[str] = typer.Argument(None, help="Experiment id or name (default: everything)."),
    run: Optional[int] = typer.Option(None, help="One run instead of an experiment."),
    since: Optional[str] = typer.Option(None, help="Only records since this date (YYYY-MM-DD)."),
    out_file: Optional[Path] = OUT_FILE,
):
    """A markdown postmortem generated from the ledger.

    Timeline, failures by category and mode, cost, what each gate did, overrides and open items.
    """
    import datetime as dt

    from skillos.files import write_atomic
    from skillos.ledger import Ledger
    from skillos.ledger.postmortem import postmortem

    if since:
        try:
            dt.date.fromisoformat(since[:10])
        except ValueError:
            raise SkillosError(f"--since {since!r}: expected a date like 2026-11-29") from None
    with Ledger() as ledger:
        experiment_id = None if experiment is None else ledger.resolve_experiment(experiment)
        text = postmortem(ledger, experiment_id, run, since)
    if out_file:
        write_atomic(out_file, text)
        emit(out_file, False, lambda f: [f"postmortem written to {f}"])
    else:
        from skillos.secrets import redact_text

        sys.stdout.write(redact_text(text))


def watch(
    pid: List[int] = typer.Option([], "--pid", help="A process of the job (repeatable)."),
    path: List[Path] = typer.Option([], "--path", help="A log or checkpoint folder that should grow."),
    stall_minutes: float = typer.Option(15.0, help="No growth (or an idle device) this long is a stall."),
    idle_minutes: float = typer.Option(10.0, help="An idle box this long after the job ends alarms."),
    busy_percent: float = typer.Option(10.0, help="GPU (or CPU) use below this counts as idle."),
    gpus: int = typer.Option(0, help="GPUs on the box, to cost an idle box in GPU-hours."),
    interval: float = typer.Option(60.0, help="Seconds between looks."),
    max_ticks: Optional[int] = typer.Option(None, help="Stop after this many looks."),
    stop_on: List[str] = typer.Option([], "--stop-on", help="An alarm kind that stops the job's processes "
                                      "(SIGTERM, then SIGKILL after config.STOP_GRACE_S): stall or device-idle (repeatable)."),
    ledger_path: Optional[Path] = typer.Option(None, "--ledger", help="The ledger file alarms go to "
                                               "(default $SKILLOS_HOME/ledger.db)."),
    after_minutes: Optional[float] = typer.Option(None, "--after-minutes", min=0, help="How long the watch goes "
                                                  "on after the job ends (default: --idle-minutes; 0: it stops "
                                                  "at its first look after the end)."),
    done_file: Optional[Path] = typer.Option(None, "--done-file", help="The job is over once this file exists "
                                             "(a launch whose own process lives on creates it)."),
    log: Optional[Path] = typer.Option(None, "--log", help="Also write every line to this file (a launch's "
                                       "watch outlives the launch's terminal)."),
    since: Optional[str] = typer.Option(None, "--since", help="The runs it answers for began at or after this "
                                        "ledger time (default: when it starts)."),
):
    """Gate 7: watch the box, not the job.

    Alarms go to stdout and the ledger; stops when the job has ended and the box has been idle
    for --idle-minutes, or --after-minutes after the job ended. A job that died without its final
    row (a run of this host begun since the watch started, still [running] while the process
    that wrote it is gone) is an alarm too. Every launch that gates it starts one beside itself;
    `skillos ledger watch` lists live and past watches.
    """
    from skillos.ledger import Ledger
    from skillos.ledger.watchdog import Watchdog, WatchConfig

    if not pid and not path:
        raise SkillosError("watch needs at least one --pid or --path")
    from skillos.config.compute import STOP_ON

    for kind in stop_on:
        if kind not in STOP_ON:
            raise SkillosError(f"--stop-on {kind}: not one of {', '.join(STOP_ON)}")
    config = WatchConfig(list(pid), [str(p) for p in path], stall_minutes, idle_minutes,
                         busy_percent, gpus, list(stop_on), after_minutes=after_minutes,
                         done_file=str(done_file) if done_file else None, since=since)
    say = typer.echo
    if log is not None:
        written = log.open("a", buffering=1)  # line-buffered: a launch relays what it reads there

        def say(line: str) -> None:
            written.write(line + "\n")
            typer.echo(line)
    with Ledger(ledger_path) as ledger:
        dog = Watchdog(config, ledger=ledger, echo=say)
        dog.start(str(log) if log else None)
        alarms = dog.run(interval, max_ticks)
    recorded = sum(a.kind != "process-exited" for a in alarms)
    emit(alarms, False,
         lambda a: [f"watch ended: {len(a)} alarm(s), {recorded} recorded as failures in {ledger.path}"])


def doctor_cmd(
    config: Optional[Path] = typer.Option(None, "--config", help="Also check this config's backends: keys "
                                          "present, endpoint answering, model listed or weights found."),
    set_: List[str] = SET,
    as_json: bool = JSON,
):
    """Is this machine ready? Extras, the ALFWorld engine and cached games, the ledger, disk, GPU,
    npx for the skill bundles, and (with --config) the backends; each with what to do about it.
    Exit 1 if anything needed is broken."""
    from skillos import doctor
    from skillos.cli_render import doctor_lines

    checks = doctor.run(load_config(config, set_) if config else None)
    failed = [c for c in checks if c.status == "fail"]
    emit({"ready": not failed, "checks": [c.to_dict() for c in checks]}, as_json, lambda _: doctor_lines(checks))
    raise typer.Exit(1 if failed else 0)


def canary_cmd(
    trainer: str = typer.Argument(..., help=f"{' | '.join(CANARIES.names())}: the trainer to check (skillos/registry.py CANARIES)."),
    quick: bool = typer.Option(False, "--quick", help="The few-minute size (curator and selector about 2 min "
                               "each on 2 cores, measured; CI's slow suite); a GPU launch needs a canary passed at "
                               "the default size."),
    tune: bool = typer.Option(False, "--tune", help="Judge on the tuning split (env.seed's held-out games), free "
                              "to look at while building a miniature: it counts no look at the sealed split and "
                              "vouches for nothing (only a sealed canary at the default size does)."),
    credit: Optional[str] = typer.Option(None, "--credit", help="selector only: the credit profile to check "
                                         "(default clean-oracle, the method's); a GPU launch needs its profile's."),
    variant: Optional[str] = typer.Option(None, "--variant", help="the code path to check, for a canary that has "
                                          "several: curator async (rollouts played ahead, training.async_rollouts); "
                                          "a GPU launch needs the one it runs."),
    out_dir: Optional[Path] = OUT,
    set_: List[str] = SET,
    as_json: bool = JSON,
):
    """Does the trainer learn? Its own code on a learnable CPU miniature, before vs after on
    held-out tasks, beside a negative control with the signal destroyed.

    First it prints the miniature's payoff table (held-out success per stratum of every constant
    answer and of the input-dependent one) and refuses a miniature a constant answer wins.

    Recorded in the ledger with its identity (every skillos module it imported, its config, the
    training libraries' versions) as one code hash; a launch that uses GPUs needs a passing
    canary whose identity still holds for the installed code (gate 6, recipe-learns). Exit 0: passed;
    1: it did not learn, or its negative control did. --set takes where it runs only (its
    miniature is fixed): compute.backend=ray trains the run and its control as two Ray tasks.
    """
    from skillos import api
    from skillos.cli_common import echo_err
    from skillos.training.canary import line

    end_on_sigterm()  # kill PID: the canary's run ends as interrupted in the ledger, not "running"
    result = api.canary(trainer, credit=credit, variant=variant, quick=quick, out=out_dir, sets=set_, echo=echo_err,
                        tune=tune)
    emit(result, as_json, lambda r: [line(r), r["resolution"]["line"]])
    raise typer.Exit(0 if result["passed"] else 1)


OPS_COMMANDS = {"postmortem": postmortem_cmd, "watch": watch, "doctor": doctor_cmd, "canary": canary_cmd}
