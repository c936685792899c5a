"""The checking vocabulary every launch-gate check is written in: a check is a function of a
`Context` that returns `Result`s, marked with its phase (`static`, `dry_run`, `machine`).

It sits below training/ in the layering, so a method's package (training/<method>/checks.py)
brings its own checks in the same words as the generic ones in skillos.gates; the gates find them
through the method's registry entry (skillos.registry.METHODS) and run them with their own.

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

from skillos.evals import arms  # load_games read at each call: the launch's own path
from skillos.ledger import Ledger
from skillos.ledger.store import default_path
from skillos.registry import METHODS, NO_MODEL
from skillos.safety import Ticker

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
class Context:
    """What a check reads: the config, its reference table, the ledger, where the config lives."""

    cfg: object
    reference: object = None  # the config's reference table (skillos.gates.reference.Reference), if any
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


PHASES = ("static", "dry_run", "machine")


def _marked(phase: str):
    def mark(fn: Check) -> Check:
        fn.gate_phase = phase
        return fn
    return mark


static, dry_run, machine = (_marked(p) for p in PHASES)


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


def trains_with(cfg, module: str) -> bool:
    """Whether `cfg`'s trainer (skillgate.trainer) is one of the trainers of the method whose checks
    live in `module`: a method's checks apply to its own trainers (skillos.registry.METHODS),
    whatever their names. Whether the config trains at all is `training_only`'s to say."""
    return any(m.checks == module and cfg.skillgate.trainer in m.trainers for m in METHODS)


# gate 3's rollout-positions, an eval's (skillos.gates.dryrun) and a trainer's own (its method's checks)
ROLLOUT_INCIDENT = "rewards measured on 1 of 9 positions while every health metric looked fine"


# -- dry-run fixtures: the games a dry-run check plays, loaded once per gate run --------------------
def games(ctx: Context, split: str, n: int):
    """`n` games of `split` for a dry run, loaded once per gate run (ctx.cache)."""
    key = ("games", split, n)
    if key not in ctx.cache:
        ctx.cache[key] = arms.load_games(ctx.cfg, split, n, progress=generation_progress(ctx, split))
    return ctx.cache[key]


def generation_progress(ctx: Context, split: str):
    """A first run generates its games here (a minute or more): say so, every ~10%, instead of
    going silent before the first check line."""
    return Ticker(ctx.progress, f"  generating {split} games for the dry-run")  # per 10% or per 10 s


def train_pool(ctx: Context):
    """The train split's games a dry run samples rollouts from."""
    return games(ctx, ctx.cfg.env.train_split, ctx.cfg.env.n_train_games)


def seed(ctx: Context) -> int:
    """The seed a dry run draws its groups with: the trainer's, else the env's."""
    return ctx.cfg.training.seed if ctx.cfg.training.seed is not None else ctx.cfg.env.seed
