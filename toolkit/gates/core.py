"""The machinery of the launch gates: a check is a function of a `Context` that returns
`Result`s; `run` runs every registered check and returns a `Report`.

Statuses: PASS; WARN (passes, but a person should read it: a declared departure from the
reference, a quantity that could not be measured); FAIL (refuses a launch unless overridden);
SKIP (does not apply to this config, with the reason). Static checks read the config, the
reference table and small files; dry-run checks execute code (tool surface, reward arithmetic,
a few real rollouts, the task distribution, the disk) and run before every launch.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from skillos.errors import SkillosError
from skillos.gates.reference import Reference
from skillos.registry import NO_MODEL
from skillos.ledger import Ledger
from skillos.ledger.store import default_path

GATES = {
    1: "diff the config against the paper's hyperparameter table, mechanically",
    2: "never let a missing measurement become a number",
    3: "print the quantity that should be invariant",
    4: "measure a contemporaneous control",
    5: "report a minimum detectable effect beside every claimed improvement",
    6: "if a fix doesn't move the number, the diagnosis was wrong",
    7: "watch the box, not the job",
}
STATUSES = ("PASS", "WARN", "FAIL", "SKIP")


@dataclass
class Result:
    check: str  # stable name, what --override names
    gates: tuple
    status: str
    key: str = ""  # the config key (or derived quantity) the check read
    seen: object = None
    expected: object = None
    incident: str = ""  # what the check prevents
    detail: str = ""
    overridden: str | None = None  # the override's reason, when a person overrode a FAIL
    reads: tuple = ()  # other config keys the check read besides `key` (traced by gate check --trace)
    values: dict = field(default_factory=dict)  # the numbers behind the line, for --json (e.g. the MDE)
    machine: bool = False  # a FAIL for what this machine lacks (data, an extra), not for the config
    # what clears it, for the plan's before-launch list: {"owner": "agent" | "person", "command", "time"}
    todo: dict | None = None

    @property
    def gate(self) -> int:
        return self.gates[0]

    def line(self) -> str:
        gates = ",".join(map(str, self.gates))
        parts = [f"{self.status:<4} gate {gates:<3} {self.check}"]
        if self.key and self.status != "SKIP":
            parts.append(f"{self.key}: seen {_show(self.seen)}, expected {_show(self.expected)}")
        if self.detail:
            parts.append(self.detail)
        if self.status in ("FAIL", "WARN") and self.incident:
            parts.append(f"prevents: {self.incident}")
        if self.overridden:
            parts.append(f"OVERRIDDEN: {self.overridden}")
        return " · ".join(parts)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["gates"], data["reads"] = list(self.gates), list(self.reads)
        return data


def _show(value) -> str:
    if value is None:
        return "unset"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


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


@dataclass
class Context:
    """What a check reads: the config, its reference table, the ledger, where the config lives."""

    cfg: object
    reference: Reference | None = None
    ledger: object = None
    base_dir: Path = Path(".")
    echo: Callable[[str], None] = lambda _line: None
    # where a long check says it is still working (a first dry-run generates its games: minutes),
    # also when a launch prints only the summary of the results (gates.enforce)
    progress: Callable[[str], None] = lambda _line: None
    used_divergences: set = field(default_factory=set)
    cache: dict = field(default_factory=dict)  # shared by dry-run checks (games, pools)
    command: str | None = None  # the launch being gated (eval, optimize, ...); None: skillos gate check
    verbose: bool = False  # echo SKIP rows too (quiet by default: the summary counts them)

    @property
    def training(self) -> bool:
        return self.cfg.training.is_set()

    @property
    def llm_executor(self) -> bool:
        return self.cfg.executor.backend != NO_MODEL

    def path(self, value: str) -> Path:
        """An input file the config names: relative to the config's folder, else to the cwd."""
        p = Path(value).expanduser()
        if p.is_absolute() or not (self.base_dir / p).exists():
            return p
        return self.base_dir / p

    def expect(self, check: str, gates: tuple, key: str, seen, expected, ok: bool,
               incident: str, detail: str = "") -> Result:
        """PASS when ok; else a declared departure (divergences[key] with this value) is a WARN
        showing its reason, and anything else is a FAIL."""
        if ok:
            return Result(check, gates, "PASS", key, seen, expected, incident, detail)
        declared = self.cfg.divergences.get(key)
        if declared is None:
            hint = f"declare it under divergences.{key} with a reason, or set it to {_show(expected)}"
            return Result(check, gates, "FAIL", key, seen, expected, incident,
                          f"{detail}; {hint}" if detail else f"undeclared departure: {hint}")
        self.used_divergences.add(key)
        if not same(declared["value"], seen):
            return Result(check, gates, "FAIL", key, seen, expected, incident,
                          f"divergences.{key} declares {_show(declared['value'])} but the config "
                          f"has {_show(seen)}: the declaration is stale")
        return Result(check, gates, "WARN", key, seen, expected, incident,
                      f"declared departure: {declared.get('reason')}")


def same(a, b) -> bool:
    """Config equality: floats within rounding; model names by their last path part, any case."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    if isinstance(a, str) and isinstance(b, str):
        return a.rsplit("/", 1)[-1].lower() == b.rsplit("/", 1)[-1].lower()
    return a == b


Check = Callable[[Context], "Result | list[Result]"]
# The modules of skillos.gates whose checks run, in this order: listing a module here registers
# its checks; importing it elsewhere registers nothing. A check says its phase with a decorator:
# `static` (reads the config and the ledger), `dry_run` (runs code: plays games, builds the
# trainer) or `machine` (facts about this machine that cost nothing to read, free disk and data
# present: `plan` and every launch run them with the static checks; `gate check`, which reads the
# config alone, only with --dry-run).
CHECK_MODULES = ("approval", "dryrun", "learning", "scale", "static")
PHASES = ("static", "dry_run", "machine")


def _marked(phase: str):
    def mark(fn: Check) -> Check:
        fn.gate_phase = phase
        return fn
    return mark


static, dry_run, machine = (_marked(p) for p in PHASES)


@functools.cache
def _registered(phase: str) -> tuple:
    import importlib

    found = []
    for name in CHECK_MODULES:
        module = importlib.import_module(f"skillos.gates.{name}")
        found += [fn for fn in vars(module).values()
                  if getattr(fn, "gate_phase", None) == phase and fn.__module__ == module.__name__]
    return tuple(found)


def checks(phase: str) -> list[Check]:
    """The checks of one phase (PHASES), from CHECK_MODULES in order, each in its module's order."""
    if phase not in PHASES:
        raise ValueError(f"no gate phase {phase!r}; one of {', '.join(PHASES)}")
    return list(_registered(phase))


def training_only(*gates: int):
    """A check that applies to training configs only; on others it is a SKIP that says so.
    The check's name is its function's name with dashes."""

    def wrap(fn: Check) -> Check:
        name = fn.__name__.replace("_", "-")

        @functools.wraps(fn)
        def check(ctx: Context):
            if not ctx.training:
                return Result(name, gates, "SKIP", detail="not a training config")
            return fn(ctx)

        return check

    return wrap


def read_ledger(ctx: Context, read: Callable):
    """`read(ledger)` on the launch's ledger, else on $SKILLOS_HOME's opened read-only (`gate
    check` records nothing); None when there is no ledger at all."""
    if ctx.ledger is not None:
        return read(ctx.ledger)

    if not default_path().is_file():
        return None
    with Ledger.read_only(default_path()) as book:
        return read(book)


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
