"""Learning canaries (`skillos canary TRAINER`): does a trainer move the number it exists to move?

A canary runs a trainer's own code (the same trainer class, reward, credit, masks and rollout
path a GPU run uses) on a miniature that a working recipe learns on 2 CPU cores, and measures a
metric declared in advance on held-out tasks before and after training, paired, with the exact
test and the verdict words of `evals/stats.py`. Beside it, two **negative controls** train the
same way from the same start with the learning signal destroyed: rewards or selection utilities
permuted within each group (nothing to learn), and sign-flipped (the opposite to learn); neither
may show an improvement. A canary passes when the trained model's verdict is "improvement" and
no control's is; one that cannot fail proves nothing.

Each canary is recorded in the ledger (an experiment `canary-NAME`, one run, a `canaries` row)
with its identity (training/canary/identity.py): every skillos module the run imported, its
config as resolved, and the training libraries' versions, as one code hash. Gate 6's
`recipe-learns` check refuses a launch that spends GPUs unless a canary of its trainer passed,
by its own recorded verdicts, for code that is still what it ran.

Where it runs is the one thing a canary's caller may set (`skillos canary --set compute.KEY=...`):
with compute.backend ray its trained run and its negative control train at once, as two Ray
tasks (`trained_and_control`); its miniature is fixed, since a canary tuned until it passes
proves nothing.

Canaries plug in here by name; each module's CANARY has `name`, `metric`, `config(quick,
variant)` (its miniature's config as resolved: part of its identity), `variants` (the settings it can check apart, e.g. the selector's credit
profiles; empty for one that has none), `ran` (modules any run of it imports: an identity that
lacks one did not come from it), `key(variant)` (what the ledger and the gate call the
trainer it vouches for) and `measure(out, quick, echo, variant, compute) -> [Measured]`, one per
training seed of `canary.seeds`, each trained into OUT/seed-S (`compute`: the compute.*
settings, applied to its config). The result pools the seeds (paired by seed and task) and is
judged by RULE, declared before the run and printed with its numbers.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from skillos.config.loading import with_sets
from skillos import devices
from skillos.errors import SkillosError
from skillos.ledger.store import canary_passed
from skillos import registry
from skillos.registry import CANARIES, COMPUTE, compute_of
from skillos.training.canary import identity
from skillos.config.compute import ComputeConfig
from skillos.config.eval import EvalConfig
from skillos.config.loading import from_dict
from skillos.config.sets import apply_sets, parse_set
from skillos.devices import kind_line
from skillos.evals import distributed, stats
from skillos.evals.arms import load_games
from skillos.evals.distributed import require_ray
from skillos.evals.protocol import digest
from skillos.evals.run_folder import creatable
from skillos.evals.stats import mcnemar_exact
from skillos.files import swap_in, temp_sibling, write_atomic
from skillos.ledger import alerts
from skillos.safety import Ticker
from skillos.training.common.grpo import DESTROYED
from skillos.training.common.plan import duration_text
from skillos.training.common.warmup import READING_FILE

# the learning signal and the two negative controls (shuffled within groups: nothing to learn;
# sign-flipped: the opposite to learn), each run's folder; a canary passes when the first is an
# improvement and neither control is
SIGNALS = {"real": "trained", "shuffled": "control", "flipped": "flipped"}
# where a canary's two training runs can go (compute.backend): this process, or tasks on a cluster
CANARY_COMPUTE = tuple(c.name for c in COMPUTE if c.in_process or c.distributes)
CANARY_KEYS = ("backend", "ray_address", "ray_max_retries", "ray_gpus_per_task", "gpu")  # what --set may move
# What the project measured of each canary's wall time where a ledger holds none, by name and size:
# data beside the code, not in it, so recording a canary's time does not change the identity it ran under
TIMES = Path(__file__).resolve().parents[1] / "configs" / "canary-times.json"


@dataclass
class Measured:
    """What a miniature measured: the metric per held-out task (True / False / None) before
    training, after it, and after each negative control's training (shuffled: `control_after`,
    sign-flipped: `flipped_after`); `detail` is reported as is."""

    metric: str
    before: dict
    after: dict
    control_after: dict
    detail: dict = field(default_factory=dict)
    flipped_after: dict | None = None  # after the sign-flipped control's training
    games: str | None = None  # the held-out games judged, by content (evals.protocol.task_set_hash)
    seed: int | None = None  # the training seed (of canary.seeds) these runs trained with
    # held-out task -> its stratum (a task type), where the right answer differs by stratum: every
    # stratum must be an improvement on its own (RULE, by_stratum), and the payoff table shows each
    # constant answer losing some stratum; None: one right answer for every task
    strata: dict | None = None


class Canary:
    """What every canary shares: no variants unless it says so, and the ledger names it by its name."""

    name = ""
    variants: tuple = ()
    variant_option = "--variant"  # how `skillos canary NAME` is told a variant (the gate's refusal names it)

    def launch_key(self, cfg) -> str:
        """The key of the canary that vouches for a launch of this trainer with `cfg` (its name; a
        canary run per setting, such as the selector's per credit profile, says which)."""
        return self.name

    def key(self, variant: str | None = None) -> str:
        return self.name

    # Where the project measured that this canary's default-size miniature is refused by its own
    # payoff table (a constant answer not beaten): what and where, said by gate 6 so a person does
    # not spend the canary's time to learn it; None: not refused when last measured
    refused: str | None = None

    def payoff(self, quick: bool, echo, variant: str | None = None, compute=()) -> dict | None:
        """The miniature's payoff table (training/canary/payoff.py) where the right answer depends
        on the input; None for a canary with one answer to learn (optimize: a document)."""
        return None


def canary(name: str):
    """The canary of a trainer name (a one-line error for an unknown one)."""
    if name not in CANARIES:
        raise SkillosError(f"canary {name!r}: no such canary; choose one of {', '.join(CANARIES.names())}")
    return registry.load(CANARIES[name].target)


def compute_sets(sets) -> list[str]:
    """The `--set` items a canary takes: where it runs (CANARY_KEYS of compute) and where it
    reports (training.report_to), validated as a config file's, with compute.backend local or ray
    (ray installed); anything else is a one-line error (its miniature is fixed)."""
    import dataclasses

    sets = list(sets or ())
    for item in sets:
        path = parse_set(item)[0]  # a malformed item: its one-line ConfigError
        if path != ["training", "report_to"] and path[0] != "compute":
            raise SkillosError(f"canary --set {item!r}: only compute.* keys (where the canary runs) and "
                               "training.report_to (where it reports); its miniature is fixed: a canary tuned until "
                               "it passes proves nothing")
    compute = from_dict(apply_sets({"experiment": {"name": "canary"}}, sets)).compute  # unknown key, bad value
    default = ComputeConfig()
    moved = [f.name for f in dataclasses.fields(compute) if getattr(compute, f.name) != getattr(default, f.name)]
    idle = [name for name in moved if name not in CANARY_KEYS]
    if idle:
        raise SkillosError(f"canary --set: compute.{idle[0]} does nothing for a canary; it takes compute."
                           f"{', compute.'.join(CANARY_KEYS)}")
    if compute.backend not in CANARY_COMPUTE:
        raise SkillosError(f"canary --set: compute.backend {compute.backend}: a canary runs on compute.backend "
                           f"{' or '.join(CANARY_COMPUTE)}")
    if COMPUTE[compute.backend].distributes:
        require_ray()  # now, not after the warm start
    return sets


def described(signal: str, what: str) -> str:
    """How a canary's progress line names a run's signal: `what`, or how a control destroyed it."""
    return what if signal == "real" else f"{what} {DESTROYED[signal]}: a negative control"


def held_out_seed(cfg, offset: int | None = None) -> int:
    """The env seed a canary's held-out games are drawn with: canary.sealed_seed on the sealed
    split (games tuning never reads), env.seed on the tuning split; plus `offset` where a canary
    draws all its games per training seed (optimize: the seed)."""
    return (cfg.canary.sealed_seed if cfg.canary.split == "sealed" else cfg.env.seed or 0) + (offset or 0)


def load(cfg, split: str, n: int, echo, what: str) -> list:
    """A canary's games, saying so every 10% or 10 s while a first run generates them (minutes)."""

    return load_games(cfg, split, n, Ticker(echo, f"{what}: generating {split} games"))


def warm_reading(warm: str) -> dict | None:
    """What the warm start at `warm` recorded of what its turns say before their call (learned or
    not, over how many turns), or None."""
    try:
        return json.loads((Path(warm) / READING_FILE).read_text())
    except (OSError, ValueError):
        return None


def drawn_warm_start(cfg, folder: Path, build, echo=None, what: str = "canary") -> str:
    """The warm start at `folder`: up to canary.warmup_draws built by build(target, seed) (seed
    training.seed, then the next), the first whose turns learned to say what they read, else the
    last; its reading file records which draw of how many. The check reads the warm start's own
    training turns, never a held-out game, so drawing again tunes nothing the canary is judged on.
    Each draw is built beside `folder` and swapped in whole; a folder holding a model is reused."""

    if (folder / "config.json").is_file():
        return str(folder.resolve())
    draws, base = cfg.canary.warmup_draws, cfg.training.seed or 0
    for draw in range(1, draws + 1):
        target = temp_sibling(folder)
        try:
            build(target, base + draw - 1)
            read = warm_reading(str(target))
            if read is not None and not read["learned"] and draw < draws:
                if echo:
                    echo(f"{what}: warm start draw {draw} of {draws} did not learn to say what its turns read "
                         f"(its own training turns); drawing again with seed {base + draw}")
                shutil.rmtree(target)
                continue
            if read is not None:
                write_atomic(target / READING_FILE, json.dumps({**read, "draw": draw, "draws": draws}))
            identity.stamp(target, identity.config_digest(cfg))  # a rerun reuses it only for this code
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        swap_in(target, folder)  # what an interrupted run left there is set aside and removed
        return str(folder.resolve())


def by_task_type(games) -> dict:
    """Task type -> its games, each type in the order given (a canary's strata)."""
    out: dict[str, list] = {}
    for game in games:
        out.setdefault(game.task_type, []).append(game)
    return out


def held_out_games(cfg, echo, name: str) -> list:
    """A model canary's held-out games: the sealed split (canary.sealed_seed: games tuning never
    reads) or the tuning split (env.seed)."""
    return load(with_sets(cfg, [f"env.seed={held_out_seed(cfg)}"]), cfg.env.split, cfg.env.n_games, echo,
                f"canary {name}")


def miniature_games(cfg, echo, name: str) -> tuple[list, list]:
    """A model canary's train games and its held-out games: the sealed split (canary.sealed_seed:
    games tuning never reads) or the tuning split (env.seed), saying which."""
    what = f"canary {name}"
    train = load(cfg, cfg.env.train_split, cfg.env.n_train_games, echo, what)
    held_out = held_out_games(cfg, echo, name)
    echo(f"{what}: {len(train)} train games, {len(held_out)} held-out ({cfg.env.split}, the {cfg.canary.split} "
         f"split: env seed {held_out_seed(cfg)}); warm start ({cfg.canary.warmup_steps} supervised steps)")
    return train, held_out


def trained_and_control(cfg, out: Path, work, echo, model: bool = True, stamp_as: str | None = None) -> dict:
    """{signal: work(signal, folder, echo)} for the run trained on the real signal (OUT/trained) and
    the negative controls (OUT/control: shuffled, OUT/flipped: sign-flipped), each from the same
    start. One after the other; with compute.backend ray, as Ray tasks (evals/distributed.py; at
    once when the cluster has the CPUs free), each training into its folder from its worker: OUT, like the warm start and the
    games the tasks read, must be on a file system the workers share (true of a local cluster). A
    task whose worker died runs again on its folder as a rerun of the canary would (a run
    finished there is reused; one cut off starts over: a canary checkpoints its last step only);
    this process alone writes the canary's result and the ledger. `model`: the runs train or run
    a model (a task then reserves a GPU when compute.gpu names them). `stamp_as`: the canary's
    config digest its run folders are stamped with (default: `cfg`'s; a seed's config is the
    canary's with its seed set)."""
    digest = stamp_as or identity.config_digest(cfg)
    if not compute_of(cfg).distributes:
        return {signal: _stamped(work, digest, signal, out / folder, echo) for signal, folder in SIGNALS.items()}

    out = Path(out).resolve()  # a worker's working folder is not this process's
    tasks = [distributed.Task(f"canary {folder} run", _quiet_work, (work, digest, signal, out / folder),
                              distributed.resources(cfg, model_in_task=model)) for signal, folder in SIGNALS.items()]
    results = {}

    def finished(task, result) -> None:
        results[task.args[2]] = result
        echo(f"{task.label} finished on ray ({len(results)} of {len(tasks)})")

    echo(f"{len(tasks)} Ray tasks submitted: the trained run and its negative controls (shuffled, sign-flipped)")
    distributed.run_tasks(cfg, tasks, finished, rerun=": run the canary again with the same --out")
    return {signal: results[signal] for signal in SIGNALS}


def _stamped(work, digest: str, signal: str, folder: Path, echo):
    """One run of a canary, its folder and checkpoints then stamped with the identity of the
    process that ran it (a Ray worker imports what it trains with: the driver cannot see it)."""
    result = work(signal, folder, echo)
    identity.stamp(folder, digest)
    return result


def _quiet_work(work, digest: str, signal: str, folder: Path):
    """A canary's run as a Ray task: a worker's prints would be lost, so this process reports."""
    return _stamped(work, digest, signal, folder, lambda _line: None)


def judge(measured: Measured, looks: int | None = None) -> dict:
    """Before vs after and before vs each control's after, in the verdict function's words, at
    the schema's alpha, power and bootstrap. The trained comparison is corrected over `looks`
    (Bonferroni; None: a family of one); each control is its own family of one, uncorrected (a
    falsification check, not a second claim: correcting it would make it easier to pass)."""

    e, out = EvalConfig(), {}
    runs = [("trained", measured.after), ("control", measured.control_after)]
    if measured.flipped_after is not None:
        runs.append(("flipped", measured.flipped_after))
    for key, after in runs:
        comparison = stats.compare(measured.before, after, names=(key, "before"), alpha=e.alpha, power=e.power,
                                   n_boot=e.bootstrap)
        if key == "trained" and looks:  # every look at the sealed split was a chance to pass by luck
            verdict = stats.verdicts({key: comparison}, alpha=e.alpha, correction="bonferroni", family_size=looks,
                                     family=f"{looks} judged look(s) at the sealed canary split")[key]
        else:
            verdict = stats.verdicts({key: comparison}, alpha=e.alpha, family=f"canary {key} vs before",
                                     correction="none")[key]
        out[key] = {"comparison": comparison, "verdict": verdict}
    return out


def run(name: str, *, variant: str | None = None, quick: bool = False, out: str | Path | None = None, ledger=None,
        echo=print, sets=(), tune: bool = False) -> dict:
    """Run canary `name` (at `variant`, for a canary that has them) and record it; the result
    `skillos canary --json` prints. `sets`: compute.* KEY=VALUE items, where it runs. `tune`:
    judged on the tuning split (as --quick is), vouching for nothing and counting no look at
    the sealed one."""
    chosen = canary(name)
    sets = compute_sets(sets)
    if variant is not None and variant not in chosen.variants:
        raise SkillosError(f"canary {name}: no variant {variant!r}; "
                           + (f"choose one of {', '.join(chosen.variants)}" if chosen.variants else "it has none"))
    key = chosen.key(variant)
    started = time.perf_counter()
    source_at_start = identity.snapshot()  # the identity written at the end is of the source that ran
    folder = Path(out) if out else Path("runs") / f"canary-{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    split_sets = ["canary.split=tuning"] if tune else []
    resolved = with_sets(chosen.config(quick, variant), split_sets)
    placed = devices.undeclared(with_sets(resolved, sets)) if resolved.training.is_set() else None
    if placed:  # a GPU box: the canary trains where the launch will, on the devices torch chose
        sets = [*sets, f"compute.gpu={devices.seen_gpu_spec()}"]
        echo(f"canary {name}: torch sees {devices.cuda_devices()} CUDA device(s): it runs on them "
             f"({sets[-1]}, where it runs: not part of its identity)")
    config = identity.config_digest(resolved)
    if not folder.exists():
        creatable(folder)  # /proc, a read-only disk: one line before anything runs
    identity.guard(folder, config)  # a folder made by other code is never recorded under this code's hash
    undone = ledger.invalidated_canary_in(folder) if ledger is not None else None
    if undone is not None:  # its finished runs would be reused: the invalidation undone in seconds
        raise SkillosError(f"canary --out {folder}: canary #{undone['id']} recorded from it was invalidated "
                           f"({undone['reason']}); its runs are not reused: choose a new --out")
    folder.mkdir(parents=True, exist_ok=True)
    identity.stamp(folder, config)  # what it ran so far: a rerun after a kill is guarded too
    # can the miniature be won without reading the input? refused before any run is recorded or trained
    table = chosen.payoff(quick, echo, variant, [*sets, *split_sets])
    if table is not None and not quick:
        from skillos.training.canary.payoff import require

        require(table, key)
    elif table is not None and not table["every_constant_loses"]:  # --quick vouches for nothing: said, not refused
        echo(f"canary {key}: at the --quick size the payoff table cannot show that a constant answer loses; "
             "this run checks that the pipeline runs end to end, not that it reads its input")
    run_id = None
    if ledger is not None:
        experiment = ledger.find_or_add_experiment(
            f"canary-{key}", config, hypothesis=f"{key}: training moves {chosen.metric} "
            "on held-out tasks; the same training with the signal destroyed does not",
            success_metric=f"{chosen.metric} (paired, exact McNemar) vs before training")
        run_id = ledger.start_run(experiment, "canary", config={"canary": name, "variant": variant, "quick": quick,
                                                              "config_digest": config, "compute": sets})
    kind = devices.machine_kind(with_sets(resolved, sets).compute.backend)
    echo(f"canary {key}: seeds {', '.join(map(str, resolved.canary.seeds))}; the pass rule, declared before "
         f"the run: {RULE}")
    if ledger is not None:
        shipped = shipped_time(chosen, key, quick)
        echo(f"canary {key}: expected wall time: "
             f"{expected_time(config, ledger.canary_timings(key, quick), kind, shipped)}")
    try:
        with contextlib.redirect_stdout(sys.stderr):  # TRL logs to stdout; stdout is the result's
            measured = chosen.measure(folder, quick, echo, variant, [*sets, *split_sets])
    except BaseException as exc:
        if ledger is not None:
            status = "interrupted" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "crashed"
            ledger.end_experiment_run(run_id, status, f"{type(exc).__name__}: {exc}"[:300])
        raise
    edited = identity.edited_since(source_at_start, identity.loaded_modules())
    if edited:  # its certificate would vouch for code that never ran
        why = (f"canary {key}: not recorded: {', '.join(edited[:3])}" + (f" and {len(edited) - 3} more" if
               len(edited) > 3 else "") + "; run it again on code that stays put while it runs")
        if ledger is not None:
            ledger.end_experiment_run(run_id, "crashed", why[:300])
        raise SkillosError(why)
    ran = identity.ran(folder, config)  # the folder and every checkpoint carry what the whole canary ran
    held_out = looked_at(resolved, measured, key, ledger)
    result = {**judged_result(measured, held_out["looks"], table), "held_out": held_out, "trainer": key, "quick": quick,
              "compute": sets,
              "code_hash": ran["code_hash"], "identity": ran, "wall_s": round(time.perf_counter() - started, 1),
              "machine": kind, "output_dir": str(folder), "payoff": table}
    result["resolution"] = resolution(result["n"], result["alpha"], measured)
    result["passed"] = canary_passed(result)  # the ledger's rule, read from the verdicts above
    result["alert"] = alert_verdict(with_sets(resolved, sets), result, echo)
    (folder / "canary.json").write_text(json.dumps(result, indent=1, default=str))
    if ledger is not None:
        ledger.add_canary(run_id, result)
        ledger.end_experiment_run(run_id, "finished", line(result), experiment_status="measured")
    return result


def alert_verdict(cfg, result: dict, echo) -> dict | None:
    """The verdict as a trackio alert where the canary's config reports to trackio (--set
    training.report_to=trackio): info when it passed, error when it did not."""
    verdict = "PASS" if result["passed"] else "FAIL"
    return alerts.send(cfg, "canary", f"canary {result['trainer']}: {verdict}", line(result),
                       "info" if result["passed"] else "error", echo)


# The pass rule, fixed before any run and printed with its numbers (ledger.store.canary_passed
# applies it to what a run recorded).
RULE = ("the trained runs pooled over every seed (paired by seed and task, exact McNemar, Bonferroni over every "
        "judged look at the sealed held-out games) are an improvement at alpha; every seed's trained run moved up "
        "(more tasks gained than lost); where the right answer differs by input, every stratum (task type) pooled "
        "over the seeds is an improvement at alpha on its own, and the trained runs pooled are an improvement at "
        "alpha (the same correction) over the payoff table's best constant answer on the same tasks, so a trainer "
        "that ignored its input cannot pass however low its start; "
        "and neither negative control, pooled over the seeds, is an improvement; "
        "only a canary on the sealed split at its default size vouches for a launch")


# A canary size neither this ledger nor the project has timed (TIMES holds what the project
# measured, docs/canaries.md each run's numbers).
UNTIMED = "never timed in this ledger, nor by the project at this size"


def expected_time(config: str, timings: list, kind: dict, shipped: tuple | None = None) -> str:
    """How long a canary (config digest `config`) should take on a machine of `kind`
    (devices.machine_kind), read from the wall times its trainer's finished canaries at the same
    size recorded (`timings`: Ledger.canary_timings): the same config on the same kind of machine
    first, then the same kind at another config, then other machines, each said as what it is;
    with none, what the project measured (`shipped`: (seconds, where), TIMES), else UNTIMED."""
    from statistics import median

    tiers = [([t["wall_s"] for t in timings if t["machine"] == kind and t["config"] == config],
              "on this kind of machine"),
             ([t["wall_s"] for t in timings if t["machine"] == kind], "on this kind of machine at another config"),
             ([t["wall_s"] for t in timings], "on other machines (none timed on this kind)")]
    for walls, where in tiers:
        if walls:
            low, high = duration_text(min(walls)), duration_text(max(walls))
            return (f"measured: median {duration_text(median(walls))} over {len(walls)} finished "
                    f"canar{'y' if len(walls) == 1 else 'ies'} ({low}-{high}) {where}; this machine: {kind_line(kind)}")
    if shipped:
        return (f"never timed in this ledger; the project measured {duration_text(shipped[0])} ({shipped[1]}); "
                f"this machine: {kind_line(kind)}")
    return f"{UNTIMED}; this machine: {kind_line(kind)}"


def estimate(key: str, quick: bool, timings: list, backend: str | None = None) -> str:
    """expected_time of canary `key` at `quick`'s size, run here on compute.backend `backend`
    (None: the config's default)."""
    name, _, variant = key.partition(":")
    chosen = canary(name)
    resolved = chosen.config(quick, variant or None)
    config = identity.config_digest(resolved)
    return expected_time(config, timings, devices.machine_kind(backend or resolved.compute.backend),
                         shipped_time(chosen, key, quick))


def shipped_time(chosen, key: str, quick: bool) -> tuple | None:
    """(seconds, where) the project measured canary `key` at `quick`'s size (TIMES), for its default
    variant; None where it has not."""
    if key != chosen.key(None):
        return None
    entry = (json.loads(TIMES.read_text()).get(chosen.name) or {}).get("quick" if quick else "default")
    return tuple(entry) if entry else None


def looked_at(cfg, measured: list, key: str, ledger) -> dict:
    """Which held-out games the canary was judged on, and on the sealed split the looks at them:
    every judged canary of `key` on the same games the ledger holds, this one included (None:
    uncounted, with no ledger; the tuning split counts none)."""
    digests = sorted({m.games for m in measured if m.games})
    games = digest(digests) if digests else None
    sealed = cfg.canary.split == "sealed"
    looks = ledger.canary_looks(key, games) + 1 if sealed and games and ledger is not None else None
    return {"split": cfg.canary.split, "env_seed": held_out_seed(cfg), "games": games, "looks": looks,
            "why": None if looks or not sealed else "looks uncounted: no ledger"}


def pooled(measured: list) -> Measured:
    """Every seed's measurements as one paired sample, keyed by seed and task."""
    def merge(attr):
        values = [getattr(m, attr) for m in measured]
        if any(v is None for v in values):
            return None
        return {f"{m.seed}|{task}": outcome for m, v in zip(measured, values) for task, outcome in v.items()}

    strata = None if any(m.strata is None for m in measured) else \
        {f"{m.seed}|{task}": stratum for m in measured for task, stratum in m.strata.items()}
    return Measured(measured[0].metric, merge("before"), merge("after"), merge("control_after"),
                    flipped_after=merge("flipped_after"), strata=strata)


def by_stratum(measured: Measured) -> list[dict]:
    """The trained runs pooled over the seeds, judged per stratum (none: the canary has one right
    answer for every task): each stratum's n, before/after, b/c, p, direction and verdict. Every
    stratum must be an improvement at alpha on its own, uncorrected: the claim "it learned for
    every input" holds only if each part does (an intersection-union test needs no correction),
    and a policy that wrote one answer whatever it read moves one stratum at most, or every
    stratum a little from a garbled start (measured: a selector warm start at 10 of 40 unread
    went 1/20 -> 2/20 on heat and 4/20 -> 12/20 on cool, 26 of 40 first reads naming the cool
    oracle whatever the slate)."""

    if not measured.strata:
        return []
    e, out = EvalConfig(), []
    for stratum in sorted(set(measured.strata.values())):
        tasks = [t for t, s in measured.strata.items() if s == stratum]
        c = stats.compare({t: measured.before.get(t) for t in tasks}, {t: measured.after.get(t) for t in tasks},
                          names=(stratum, "before"), alpha=e.alpha, power=e.power, n_boot=e.bootstrap)
        verdict = stats.verdicts({stratum: c}, alpha=e.alpha, family=f"canary stratum {stratum} vs before",
                                 correction="none")[stratum]
        out.append({"stratum": stratum, "n": c.n_paired, "before": c.control_rate, "after": c.treatment_rate,
                    "b": c.b, "c": c.c, "p": c.p_value, "direction": _direction(c.difference),
                    "verdict": verdict.label, "improvement": verdict.word == "improvement"})
    return out


def _direction(difference) -> str:
    return "unmeasured" if difference is None else "up" if difference > 0 else "down" if difference < 0 else "flat"


def versus_constant(measured: list, payoff: dict | None, looks: int | None = None) -> dict | None:
    """The trained runs pooled over the seeds vs the payoff table's best constant answer on the same
    tasks (each seed's after paired with the constant's outcome on that task; exact McNemar,
    Bonferroni over `looks` as the trained comparison): None where the canary has no payoff table."""

    best = (payoff or {}).get("best_constant")
    if not best:
        return None
    e = EvalConfig()
    constant = {f"{m.seed}|{task}": best["outcomes"].get(task) for m in measured for task in m.after}
    after = {f"{m.seed}|{task}": outcome for m in measured for task, outcome in m.after.items()}
    c = stats.compare(constant, after, names=("trained", best["answer"]), alpha=e.alpha, power=e.power,
                      n_boot=e.bootstrap)
    verdict = (stats.verdicts({"trained": c}, alpha=e.alpha, correction="bonferroni", family_size=looks,
                              family=f"{looks} judged look(s) at the sealed canary split") if looks else
               stats.verdicts({"trained": c}, alpha=e.alpha, family="canary trained vs the best constant answer",
                              correction="none"))["trained"]
    return {"answer": best["answer"], "n": c.n_paired, "constant": c.control_rate, "after": c.treatment_rate,
            "b": c.b, "c": c.c, "p": c.p_value, "p_corrected": verdict.p_adjusted, "verdict": verdict.label,
            "improvement": verdict.word == "improvement"}


def judged_result(measured: list, looks: int | None = None, payoff: dict | None = None) -> dict:
    """The pooled verdicts (the result's top-level numbers and controls), each seed's own, and
    the rule with whether each of its clauses held. `looks`: judged looks at the sealed split
    (this one included): the pooled trained p is Bonferroni-corrected over them. `payoff`: the
    miniature's payoff table, whose best constant answer the trained runs must beat."""
    together = pooled(measured)
    judged = judge(together, looks)
    constant = versus_constant(measured, payoff, looks)
    trained, c = judged["trained"], judged["trained"]["comparison"]
    strata = by_stratum(together)
    seeds = []
    for m in measured:
        own = judge(m)
        d = own["trained"]["comparison"]
        direction = _direction(d.difference)
        seeds.append({"seed": m.seed, "n": d.n_paired, "before": d.control_rate, "after": d.treatment_rate,
                      "b": d.b, "c": d.c, "p": d.p_value, "verdict": own["trained"]["verdict"].label,
                      "direction": direction, "control": _control(own["control"]),
                      "controls": {k: _control(own[k]) for k in own if k not in ("trained", "control")}})
    controls = [k for k in judged if k != "trained"]
    return {
        "metric": measured[0].metric, "n": c.n_paired, "before": c.control_rate, "after": c.treatment_rate,
        "b": c.b, "c": c.c, "p": c.p_value, "p_corrected": trained["verdict"].p_adjusted,
        "alpha": trained["verdict"].alpha,
        "verdict": trained["verdict"].label, "control": _control(judged["control"]),
        # every further control must show no improvement too (ledger.store.canary_passed)
        "controls": {k: _control(judged[k]) for k in controls if k != "control"},
        "seeds": seeds, "strata": strata, "versus_constant": constant,
        "rule": {"text": RULE, "pooled_improvement": trained["verdict"].word == "improvement",
                 "every_seed_up": all(x["direction"] == "up" for x in seeds),
                 "every_stratum_improves": all(x["improvement"] for x in strata) if strata else None,
                 "beats_best_constant": None if constant is None else constant["improvement"],
                 "no_control_improves": all(judged[k]["verdict"].word != "improvement" for k in controls)},
        "n_dropped": c.n_dropped, "reasons": {k: judged[k]["verdict"].reasons for k in judged},
        "detail": {str(m.seed): m.detail for m in measured},
    }


def _control(judged: dict) -> dict:
    c = judged["comparison"]
    return {"b": c.b, "c": c.c, "p": c.p_value, "after": c.treatment_rate, "n": c.n_paired,
            "verdict": judged["verdict"].label}


def resolution(n: int, alpha: float, measured: list) -> dict:
    """What a canary of this size can show: the smallest p its n paired tasks allow (every pair
    discordant one way, the exact test) against alpha, and whether the trained runs' weights moved
    (their learning-signal verdicts' grad_norm counts, over every seed; None: unmeasured)."""
    smallest = mcnemar_exact(n, 0) if n else None
    detects = smallest is not None and smallest < alpha
    signals = [((m.detail or {}).get("learning_signal") or {}).get("trained") for m in measured]
    counted = [x for x in signals if isinstance(x, dict) and x.get("grad_nonzero") is not None]
    moved = None if not counted else (f"grad_norm > 0 in {sum(x['grad_nonzero'] for x in counted)} of "
                                      f"{sum(x['grad_logged'] for x in counted)} trained steps")
    bound = "no paired task was measured" if smallest is None else \
        f"the smallest p {n} paired tasks allow is {smallest:.2g} (all {n} discordant one way)"
    shows = (f"below alpha {alpha}: it can detect learning" if detects else
             f"not below alpha {alpha}: it cannot show learning, only that the trainer runs end to end"
             + (f" and whether its weights moved ({moved})" if moved else ""))
    return {"n": n, "smallest_p": smallest, "alpha": alpha, "can_detect": detects, "weights_moved": moved,
            "line": f"what this size can show: {bound}, {shows}"}


def line(result: dict) -> str:
    """The one summary line a canary prints."""
    def rate(x):
        return "unmeasured" if x is None else f"{x:.0%}"

    def p(x):
        return "unmeasured" if x is None else f"{x:.2g}"

    named = {"control": "shuffled control", "flipped": "sign-flipped control"}
    controls = [("control", result["control"]), *(result.get("controls") or {}).items()]
    said = "; ".join(f"{named.get(k, k)} -> {rate(c['after'])}, b/c {c['b']}/{c['c']}, p {p(c['p'])}: {c['verdict']}"
                     for k, c in controls)
    return (f"canary {result['trainer']}: {'PASS' if result['passed'] else 'FAIL'} — {result['metric']} "
            f"{rate(result['before'])} -> {rate(result['after'])} on {result['n']} held-out tasks{_split(result)}, b/c "
            f"{result['b']}/{result['c']}, p {p(result['p'])}: {result['verdict']}"
            + "".join(f" (seed {x.get('seed')} {x.get('direction')}, b/c {x.get('b')}/{x.get('c')})"
                    for x in result.get("seeds") or [])
            + "".join(f" ({x.get('stratum')}: b/c {x.get('b')}/{x.get('c')} of {x.get('n')}, {x.get('verdict')})"
                      for x in result.get("strata") or [])
            + _versus_constant(result.get("versus_constant"))
            + f"; {said}; "
            f"{result['wall_s']:.0f} s; code {result['code_hash']}")


def _versus_constant(v) -> str:
    if not isinstance(v, dict):
        return ""
    p = "unmeasured" if v.get("p") is None else f"{v['p']:.2g}"
    rate = "unmeasured" if v.get("constant") is None else f"{v['constant']:.0%}"
    return (f"; vs the best constant answer ({v.get('answer')}, {rate}): b/c {v.get('b')}/{v.get('c')}"
            f" of {v.get('n')}, p {p}: {v.get('verdict')}")


def _split(result: dict) -> str:
    held = result.get("held_out")
    if not isinstance(held, dict):
        return ""
    looks = held.get("looks")
    return f" ({held.get('split')} split" + (f", look {looks}, p corrected {result.get('p_corrected'):.2g}"
                                              if looks and result.get("p_corrected") is not None else "") + ")"


def trainer_key(cfg) -> str:
    """Which canary vouches for the trainer a config launches ("selector:clean-oracle": the
    selector's canary is per credit profile; a profile with no selection credit of its own is
    vouched for by the method's, see selector.VOUCHED_BY_METHOD; "curator:async": rollouts played
    ahead, training.async_rollouts)."""
    trainer = cfg.skillgate.trainer
    if cfg.training.async_rollouts:  # rollouts played ahead are another code path: its own canary (curator --variant async)
        return f"{trainer}:async"
    return canary(trainer).launch_key(cfg) if trainer in CANARIES else trainer
