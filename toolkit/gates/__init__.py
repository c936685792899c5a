"""The seven launch gates, as code. `check` runs them; `enforce` is what every launcher calls
before it spends compute: it records each result in the ledger, applies a person's overrides
(each recorded as a process failure with its reason) and refuses on any remaining FAIL.

    1 diff the config against the paper's table   5 report an MDE beside every improvement
    2 never let a missing measurement be a number 6 a fix that doesn't move the number failed
    3 print the quantity that should be invariant 7 watch the box, not the job
    4 measure a contemporaneous control

Static checks import nothing heavy (no torch, no ALFWorld) and take well under a second;
dry-run checks execute code and play a few real games.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from skillos.errors import ConfigError, SkillosError
from skillos.gates import reference as references
from skillos.gates import core
from skillos.config.fields import did_you_mean
from skillos.checking import GATES, Context, Result
from skillos.gates.core import Report, run_checks
from skillos.ledger.store import actor  # noqa: F401 - who launched: recorded with overrides
from skillos.ledger import alerts
from skillos.ledger.experiments import record_experiment

__all__ = ["GATES", "GateRefused", "Report", "Result", "check", "enforce", "refuse_on_failure"]


class GateRefused(SkillosError):
    """A launch refused by a failing gate check. `report` is the gates' Report (every result,
    the failed ones in `report.failed`); `detail` is what the refused call would have done
    (e.g. the launch plan of `skillos.train(..., dry_run=True)`)."""

    exit_code = 1

    def __init__(self, message: str, report: Report | None = None, detail: dict | None = None):
        super().__init__(message)
        self.report, self.detail = report, dict(detail or {})


def refuse_on_failure(report: Report, command: str, detail: dict | None = None, cfg=None,
                      echo: Callable[[str], None] | None = None) -> Report:
    """Raise GateRefused (carrying the report) if a check failed and was not overridden; with
    `cfg`, the refusal is also an alert where the config reports to trackio (ledger/alerts.py)."""
    if report.failed:
        names = ", ".join(r.check for r in report.failed)
        if cfg is not None:
            alerts.send(cfg, "gates", f"{command} refused by the launch gates ({names})",
                        "\n".join(r.line() for r in report.failed), "error", echo)
        raise GateRefused(f"{command} refused by the launch gates: {len(report.failed)} check(s) "
                          f"failed ({names}); fix the config, or override one with "
                          f"--override CHECK=\"reason\" (recorded in the ledger)", report, detail)
    return report


def check(cfg, *, dry_run: bool = False, ledger=None, echo: Callable[[str], None] | None = None,
          before_dry_run: Callable[[set], None] | None = None,
          overridden: set | None = None, command: str | None = None, trace: bool = False,
          progress: Callable[[str], None] | None = None, machine: bool = False, partial: bool = False,
          verbose: bool = False) -> Report:
    """Run every static check (and the dry-run checks) on a loaded config.

    `before_dry_run(names)` is called with every check name once the static checks have run
    and before any code is executed (enforce validates --override names there). With
    `overridden` (the checks a person overrode), a static FAIL outside it refuses before any
    code runs: the dry-run checks, which play games, are skipped. With `trace` (and always with
    the dry-run, so at every launch) every key a check read is traced to what its consumer
    receives (gates/trace.py): a key checked but not applied is a FAIL of check `trace`.
    `echo` gets each result's line; `progress` (default: `echo`) a long check's progress.
    `machine` (and always with the dry-run): this machine's free facts too (core.checks("machine"): free
    disk for the checkpoints, the data present), as `plan` shows them. `partial` (gate check): checks
    that cannot run for what this machine lacks (data, a key, an extra) do not raise: the report holds
    every result so far and `missing` says what was lacking (its exit code 3). `verbose`: echo the
    SKIP rows too (the report holds them either way)."""
    try:
        return _check(cfg, dry_run, ledger, echo, before_dry_run, overridden, command, trace, progress, machine,
                      verbose)
    except SkillosError as exc:
        if not partial or getattr(exc, "results", None) is None:
            raise
        return Report(exc.results, dry_run, str(cfg.source or ""), None, missing=exc.missing)


def _check(cfg, dry_run, ledger, echo, before_dry_run, overridden, command, trace, progress, machine,
           verbose=False) -> Report:
    ref = None
    if cfg.reference:
        try:
            ref = references.load(cfg.reference)
        except ConfigError:
            ref = None  # the `reference` check reports it
    base = Path(cfg.source).parent if cfg.source else Path.cwd()
    quiet = lambda _line: None  # noqa: E731
    ctx = Context(cfg, ref, ledger, base, echo or quiet, command=command, progress=progress or echo or quiet,
                  verbose=verbose)
    static = core.checks("static")
    last = [c for c in static if c.__name__ == "divergences"]  # reads what the others used
    results: list = []
    results += _run(ctx, [c for c in static if c not in last] + (core.checks("machine") if machine or dry_run else []),
                    results)
    if dry_run:
        if before_dry_run:
            before_dry_run({r.check for r in results} | {c.__name__.replace("_", "-")
                                                         for c in core.checks("dry_run") + last} | {"trace"})
        if overridden is not None and any(r.status == "FAIL" and r.check not in overridden
                                          for r in results):
            dry_run = False  # refused already: no game is played to find more
        else:
            results += _run(ctx, core.checks("dry_run"), results)
    results += _run(ctx, last, results)
    rows = None
    if trace or dry_run:
        from skillos.gates import trace as tracing

        rows = tracing.trace(ctx, results)
        for result in tracing.results_of(rows):
            ctx.echo(result.line())
            results.append(result)
    return Report(results, dry_run, str(cfg.source or ""), rows)


def _run(ctx, checks: list, before: list) -> list:
    """run_checks, whose can't-run error carries every result of this gate run so far."""
    try:
        return run_checks(ctx, checks)
    except SkillosError as exc:
        if getattr(exc, "results", None) is not None:
            exc.results = before + exc.results
        raise


def parse_overrides(values: list[str]) -> dict[str, str]:
    """--override CHECK="reason" (repeatable) -> {check: reason}."""
    out = {}
    for value in values:
        name, sep, reason = value.partition("=")
        if not sep or not name.strip() or not reason.strip():
            raise SkillosError(f"--override {value!r}: expected CHECK=\"reason\" with a reason")
        out[name.strip()] = reason.strip()
    return out


STATIC_ONLY = ("sleep night",)  # launches gated by the static checks only


def preview(cfg, command: str, overrides: dict[str, str] | None = None,
            echo: Callable[[str], None] | None = None, detail: dict | None = None) -> Report:
    """A dry run's gates: the static checks the launch will run (the approval the plan asks for
    aside: a dry run is how a person reads the plan before approving it), a person's overrides
    applied as the launch applies them (nothing recorded), refused on a FAIL, so a plan that
    passes is not one the launch then refuses on the same config for another reason."""
    report = check(cfg, dry_run=False, echo=echo)
    for r in report.results:
        if r.status == "FAIL" and r.check in (overrides or {}):
            r.overridden = overrides[r.check]
    return refuse_on_failure(report, command, detail)


def enforce(cfg, command: str, ledger, overrides: dict[str, str] | None = None,
            echo: Callable[[str], None] = print) -> Report:
    """Gate a launch: run the checks, record them, apply overrides, refuse on a FAIL."""
    overrides = dict(overrides or {})

    def known(names: set) -> None:  # a typo is an error before any game is played
        for name in overrides:
            if name not in names:
                raise SkillosError(f"--override {name}: no such check"
                                   f"{did_you_mean(name, names, list_allowed=False)}")

    # A sleep night replays mined tasks, not env games: the dry-run checks play the config's env
    # (and generate its games on a first run: minutes) and say nothing about a night, whose own
    # A/A calibration runs before any candidate. Its gates are the static ones.
    report = check(cfg, dry_run=command not in STATIC_ONLY, ledger=ledger, before_dry_run=known,
                   overridden=set(overrides), command=command, progress=echo)  # a first run's games: minutes
    experiment = record_experiment(ledger, cfg)
    who = actor()
    for r in report.results:
        if r.status == "FAIL" and r.check in overrides:
            r.overridden = overrides.pop(r.check)
            ledger.add_override(r.gate, r.check, f"{command}: {r.overridden}", who, experiment)
        ledger.add_gate_result(r.gate, r.check, r.status, r.key, r.seen, r.expected, experiment)
    echo(f"gates ({command}): {report.summary()}")
    for r in report.results:
        if r.status in ("WARN", "FAIL"):
            echo("  " + r.line())
    for name in overrides:
        echo(f"  note: --override {name} not needed: that check did not fail")
    recorded = ledger.experiment(experiment)
    if report.failed and not recorded["runs"]:  # refused before it ever ran: not `planned`
        ledger.correct("experiments", experiment, "status", f"{command} refused by the launch gates "
                       f"({', '.join(r.check for r in report.failed)})", value="refused")
    elif not report.failed and recorded["status"] == "refused":  # launched now: planned again until it runs
        ledger.correct("experiments", experiment, "status", f"{command} passed the launch gates", value="planned")
    return refuse_on_failure(report, command, cfg=cfg, echo=echo)
