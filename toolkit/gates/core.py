"""The runner of the launch gates: every registered check (the generic ones in this package's
CHECK_MODULES, then each method's own, listed in skillos.registry.METHODS) run on a `Context`,
their `Result`s collected into a `Report`. The words a check is written in (Result, Context, the
phase decorators) are skillos.checking's.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass

from skillos.checking import PHASES, STATUSES, Check, Context, Result
from skillos.errors import SkillosError
from skillos.registry import METHODS


@dataclass
class Report:
    results: list[Result]
    dry_run: bool
    config: str = ""
    trace: list | None = None  # gates/trace.Row per gated key, when traced
    missing: str | None = None  # what this machine lacks that some checks needed (they could not run)

    @property
    def failed(self) -> list[Result]:
        return [r for r in self.results if r.status == "FAIL" and not r.overridden]

    @property
    def exit_code(self) -> int:
        """0: nothing failed; 1: a check failed (refused); 3: no check failed but some could not
        run, for what this machine lacks (`missing`: data, a key, an extra): not yet judged."""
        lacking = [r for r in self.failed if r.machine or r.detail.startswith("cannot run:")]
        refused = [r for r in self.failed if r not in lacking]
        return 1 if refused else 3 if lacking or self.missing else 0

    @property
    def lacking(self) -> str | None:
        """What this machine lacks that kept checks from passing (None: nothing)."""
        said = [r.detail.removeprefix("cannot run: ") for r in self.failed
                if r.machine or r.detail.startswith("cannot run:")]
        return self.missing or (said[0] if said else None)

    def counts(self) -> dict:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def summary(self) -> str:
        c = self.counts()
        kind = ("static + dry-run" if self.dry_run
                else "static only; the dry-run checks run with --dry-run and at every launch")
        return (f"{len(self.results)} checks ({kind}): {c['PASS']} pass, {c['WARN']} warn, "
                f"{c['FAIL']} fail, {c['SKIP']} skip")

    def to_dict(self) -> dict:
        mde = next((r.values for r in self.results if r.check == "mde" and r.values), None)
        data = {"config": self.config, "dry_run": self.dry_run, "counts": self.counts(),
                "exit_code": self.exit_code, "missing": self.lacking, "mde": mde,
                "results": [r.to_dict() for r in self.results]}
        if self.trace is not None:
            data["trace"] = [row.to_dict() for row in self.trace]
        return data


# The modules of skillos.gates whose checks run, in this order, then each method's own checks
# module (its METHODS entry's `checks`, in the registry's order): listing a module registers its
# checks; importing it elsewhere registers nothing. A check says its phase with a decorator
# (skillos.checking): `static` (reads the config and the ledger), `dry_run` (runs code: plays
# games, builds the trainer) or `machine` (facts about this machine that cost nothing to read, free
# disk and data present: `plan` and every launch run them with the static checks; `gate check`,
# which reads the config alone, only with --dry-run).
CHECK_MODULES = ("approval", "dryrun", "learning", "scale", "static")


def check_modules() -> tuple:
    """Every module whose checks the gates run: the generic ones, then each method's."""
    methods = tuple(m.checks for m in METHODS if m.checks)
    return tuple(f"skillos.gates.{name}" for name in CHECK_MODULES) + tuple(dict.fromkeys(methods))


@functools.cache
def _registered(phase: str, modules: tuple) -> tuple:
    found = []
    for name in modules:
        module = importlib.import_module(name)
        found += [fn for fn in vars(module).values()
                  if getattr(fn, "gate_phase", None) == phase and fn.__module__ == module.__name__]
    return tuple(found)


def checks(phase: str) -> list[Check]:
    """The checks of one phase (PHASES), module by module (check_modules, read at each call: a method
    registered or removed since is seen), each in its module's order."""
    if phase not in PHASES:
        raise ValueError(f"no gate phase {phase!r}; one of {', '.join(PHASES)}")
    return list(_registered(phase, check_modules()))


def run_checks(ctx: Context, checks: list[Check]) -> list[Result]:
    results, user_error = [], None
    for check in checks:
        try:
            out = check(ctx)
        except SkillosError as exc:
            # The user's input (a path, a backend, $ALFWORLD_DATA): still one line and exit 2,
            # but only after every other check ran, so the summary covers the whole list.
            user_error = user_error or exc
            name = check.__name__.replace("_", "-")
            out = Result(name, (0,), "FAIL", detail=f"cannot run: {exc}"[:400])
        except Exception as exc:  # noqa: BLE001 - a check that crashes has not passed
            name = check.__name__.replace("_", "-")
            out = Result(name, (0,), "FAIL", detail=f"the check itself failed: "
                         f"{type(exc).__name__}: {exc}"[:400])
        results.extend(out if isinstance(out, list) else [out])
        for result in (out if isinstance(out, list) else [out]):
            if result.status != "SKIP" or ctx.verbose:
                ctx.echo(result.line())
    if user_error is not None:
        counts = {s: sum(r.status == s for r in results) for s in ("PASS", "WARN", "FAIL", "SKIP")}
        cannot = sum(r.detail.startswith("cannot run:") for r in results)
        error = type(user_error)(f"{user_error} ({len(results)} checks: {counts['PASS']} pass, {counts['WARN']} warn, "
                                 f"{counts['FAIL']} fail ({cannot} could not run for this reason), {counts['SKIP']} skip)")
        error.results, error.missing = results, str(user_error)  # gate check prints them (an environment missing)
        raise error
    return results
