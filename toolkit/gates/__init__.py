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

import getpass
import os
from pathlib import Path
from typing import Callable

from skillos.errors import ConfigError, SkillosError
from skillos.gates import reference as references
from skillos.gates import core
from skillos.gates.core import GATES, Context, Report, Result, did_you_mean, run_checks

__all__ = ["GATES", "GateRefused", "Report", "Result", "check", "enforce"]


class GateRefused(SkillosError):
    """A launch refused by a failing gate check."""

    exit_code = 1


def check(cfg, *, dry_run: bool = False, ledger=None,
          echo: Callable[[str], None] | None = None) -> Report:
    """Run every static check (and the dry-run checks) on a loaded config."""
    from skillos.gates import static  # noqa: F401 - registers the static checks

    ref = None
    if cfg.reference:
        try:
            ref = references.load(cfg.reference)
        except ConfigError:
            ref = None  # the `reference` check reports it
    base = Path(cfg.source).parent if cfg.source else Path.cwd()
    ctx = Context(cfg, ref, ledger, base, echo or (lambda _line: None))
    last = [c for c in core.STATIC if c.__name__ == "divergences"]  # reads what the others used
    checks = [c for c in core.STATIC if c not in last]
    if dry_run:
        from skillos.gates import dryrun  # noqa: F401 - registers the dry-run checks

        checks += core.DRY_RUN
    return Report(run_checks(ctx, checks + last), dry_run, str(cfg.source or ""))


def actor() -> str:
    return os.environ.get("SKILLOS_ACTOR") or getpass.getuser()


def parse_overrides(values: list[str]) -> dict[str, str]:
    """--override CHECK="reason" (repeatable) -> {check: reason}."""
    out = {}
    for value in values:
        name, sep, reason = value.partition("=")
        if not sep or not name.strip() or not reason.strip():
            raise SkillosError(f"--override {value!r}: expected CHECK=\"reason\" with a reason")
        out[name.strip()] = reason.strip()
    return out


def enforce(cfg, command: str, ledger, overrides: dict[str, str] | None = None,
            echo: Callable[[str], None] = print, dry_run: bool = True) -> Report:
    """Gate a launch: run the checks, record them, apply overrides, refuse on a FAIL."""
    from skillos.gates import dryrun  # noqa: F401 - registers the dry-run checks

    overrides = dict(overrides or {})
    names = {r.check for r in check(cfg, ledger=ledger).results}  # static: a fraction of a second
    names |= {fn.__name__.replace("_", "-") for fn in core.DRY_RUN}
    for name in overrides:  # a typo is an error before any game is played
        if name not in names:
            raise SkillosError(f"--override {name}: no such check{did_you_mean(name, names)}")
    report = check(cfg, dry_run=dry_run, ledger=ledger)
    experiment = ledger.find_or_add_experiment(
        cfg.experiment.name, cfg.hash(), hypothesis=cfg.experiment.hypothesis,
        success_metric=f"success rate vs {cfg.eval.control.arm} (paired, exact McNemar)")
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
    if report.failed:
        names = ", ".join(r.check for r in report.failed)
        raise GateRefused(f"{command} refused by the launch gates: {len(report.failed)} check(s) "
                          f"failed ({names}); fix the config, or override one with "
                          f"--override CHECK=\"reason\" (recorded in the ledger)")
    return report
