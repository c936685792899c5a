"""An eval with a skill slate (SkillGate): every arm plays the same held-out games, `repeats`
times each, with the same frozen slate snapshot; each play is a row with its reads, their
roles and token positions. The report has, per arm, the selection metrics with their
denominators and pass@k / pass^k over repeats, and, against the control arm (the first), the
paired statistics of evals/stats.py on success and on reading the oracle.

The run's pins (evals/protocol.py) are on every row; a frozen `skillgate.eval_spec` that differs
from what this run would play is refused before anything is played, and two runs are compared
(`compare_runs`) only when their pins agree.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from skillos.config.derived import relative_to_config
from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos.evals import protocol, stats
from skillos.files import write_atomic
from skillos.registry import DEFAULT_LOCAL, NO_MODEL, local_backends
from skillos.evals.envs.registry import environment
from skillos import safety
from skillos.evals.arms import load_games
from skillos.evals.runner import play

SLATE = environment("slate")  # the slate's prompt, slates and metrics, through the environment protocol

ROWS, REPORT, SPEC = "slate_games.jsonl", "slate_report.json", "eval_spec.yaml"


class _Capture:
    """Wraps an executor to keep its last episode (token counts live there)."""

    def __init__(self, executor):
        self.executor, self.name, self.last = executor, executor.name, None

    def new_episode(self, task, skills):
        self.last = self.executor.new_episode(task, skills)
        return self.last


def arm_executors(cfg: Config, checkpoints: dict[str, str]) -> dict:
    """Arm name -> executor config: `executor` (the config's), then one per checkpoint, loaded
    as a local model (hf unless the config's executor is vllm)."""
    arms = {"executor": cfg.executor}
    backend = cfg.executor.backend if cfg.executor.backend in local_backends() else DEFAULT_LOCAL
    for name, path in checkpoints.items():
        if name in arms:
            raise SkillosError(f"--checkpoint {name}: the arm name 'executor' is the config's own")
        arms[name] = dataclasses.replace(cfg.executor, backend=backend, model=str(path))
    return arms


def run_pins(cfg: Config, games, snapshot_hash: str) -> protocol.EvalSpec:
    """The pins of a run. The prompt and tool-schema hashes are of the bytes the slate executor
    sends, rendered by the functions that send them (envs/slate/executor.py: `sent_templates`, `tools_sent`)."""

    return protocol.EvalSpec(
        task_set=protocol.task_set_hash(games), repeats=cfg.skillgate.repeats, seed=cfg.env.seed,
        prompt_hash=protocol.digest(SLATE.sent_templates()),
        tool_schema_hash=protocol.digest(SLATE.tools_sent()), snapshot_hash=snapshot_hash)


def config_pins(cfg: Config, games) -> dict:
    """The pins a slate eval of `cfg` on `games` would run under (nothing is written)."""

    repo, slates = SLATE.build_slates(cfg, games)
    return run_pins(cfg, games, SLATE.manifest_of(repo, slates)["snapshot_hash"]).pins()


def run(cfg: Config, out_dir: str | Path, ledger, checkpoints: dict[str, str] | None, echo, gate) -> dict:
    """Gate the launch (`gate(cfg, ledger)`: `skillos.evaluate_slate` passes `gates.enforce`, which
    sits above evals), then play every arm on the slate eval; rows and report go to `out_dir`."""

    g = cfg.skillgate
    if not g.slate_repo:
        raise SkillosError("skillgate.slate_repo: a slate eval needs a slate skill folder")
    out = Path(out_dir)
    if (out / REPORT).exists():
        raise SkillosError(f"{out}: already holds a slate report; evaluate into a new folder")
    games = load_games(cfg, cfg.env.split, cfg.env.n_games)
    manifest = SLATE.freeze(*SLATE.build_slates(cfg, games), out / "slate", SLATE.tasks_of(games),
                            SLATE.scenes_of(games))
    echo(SLATE.render_audit(manifest["listing_audit"]))
    repo, slates, _ = SLATE.load_frozen(out / "slate")  # play from the snapshot, not the source folder
    pins = run_pins(cfg, games, manifest["snapshot_hash"]).pins()
    if g.eval_spec:
        frozen = protocol.load_spec(relative_to_config(cfg, g.eval_spec)).pins()
        protocol.check_comparable({f"eval spec {g.eval_spec}": frozen, "this run": pins})
    gate(cfg, ledger)
    domain = environment("slate")  # its game env and executors: the heuristic, or the slate executor
    env = domain.make_env(games)
    rows = []
    for arm, backend in arm_executors(cfg, checkpoints or {}).items():
        executor = _Capture(domain.make_executor(backend))
        for repeat in range(g.repeats):
            for game in games:
                slate = slates[game.id]
                traj = play(env, executor, SLATE.SlateRetriever(repo, slate), game, cfg.env.max_steps,
                            len(slate.order))
                episode = executor.last
                reads = [r.name for r in traj.reads]
                rows.append({
                    "arm": arm, "game_id": game.id, "repeat": repeat, "task_type": game.task_type,
                    "success": traj.won, "unmeasured_reason": traj.unmeasured_reason,
                    "reads": reads, "read_roles": [slate.role(n) for n in reads],
                    "read_positions": [[r.token_start, r.token_end] for r in traj.reads],
                    "oracle": slate.oracle, "selects": backend.backend != NO_MODEL,
                    "steps": len(traj.steps), "coerced_actions": traj.coerced,
                    "completion_tokens": getattr(episode, "completion_tokens", None),
                    "selection_tokens": getattr(episode, "selection_tokens", None), "pins": pins})
        echo(SLATE.render_metrics(arm, SLATE.selection_metrics([r for r in rows if r["arm"] == arm])))
    write_atomic(out / ROWS, "".join(json.dumps(r) + "\n" for r in rows))
    protocol.write_spec(protocol.EvalSpec(**pins), out / SPEC)  # freeze it with skillgate.eval_spec
    report = summarize(rows, cfg.eval.alpha, cfg.eval.power, cfg.eval.bootstrap)
    report["snapshot"] = str(out / "slate")
    report["slates"] = manifest["composition"]  # how many skills of each category every slate held
    report["listing_audit"] = manifest["listing_audit"]  # can the listing alone pick the oracle?
    write_atomic(out / REPORT, json.dumps(report, indent=1))
    return report


def summarize(rows: list[dict], alpha: float, power: float, n_boot: int) -> dict:
    """Per-arm metrics and pass@k, and every arm against the first on the same plays."""
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    pinned: dict = {}
    for r in rows:  # every row of an arm, and every arm, under one set of pins
        protocol.check_comparable({r["arm"]: pinned.setdefault(r["arm"], r["pins"]), f"{r['arm']} ": r["pins"]})
    protocol.check_comparable(pinned)
    by_arm = {arm: [r for r in rows if r["arm"] == arm] for arm in arms}
    repeats = max((r["repeat"] for r in rows), default=0) + 1
    report = {"pins": rows[0]["pins"] if rows else None, "arms": {}, "comparisons": []}
    for arm, arm_rows in by_arm.items():
        report["arms"][arm] = {"selection": SLATE.selection_metrics(arm_rows),
                               "pass": [protocol.pass_metrics(arm_rows, k) for k in range(1, repeats + 1)]}
    control = arms[0] if arms else None
    report["pass_comparisons"] = [{"control": control, "treatment": arm, "pass": protocol.pass_comparison(
        report["arms"][control]["pass"], report["arms"][arm]["pass"])} for arm in arms[1:]]
    for arm in arms[1:]:
        for metric, value in (("success", lambda r: r["success"]),
                              ("oracle_read", lambda r: None if r["success"] is None or r.get("selects") is False
                               else "oracle" in r["read_roles"])):
            c = {f"{r['game_id']}#{r['repeat']}": value(r) for r in by_arm[control]}
            t = {f"{r['game_id']}#{r['repeat']}": value(r) for r in by_arm[arm]}
            result = stats.compare(c, t, names=(arm, control), alpha=alpha, power=power, n_boot=n_boot)
            report["comparisons"].append({"metric": metric, **result.to_dict()})
    return report


def compare_runs(run_a: str | Path, run_b: str | Path, alpha: float, power: float, n_boot: int) -> dict:
    """Two slate eval runs in one comparison: refused unless every pin agrees."""
    rows = []
    for where in (run_a, run_b):
        path = Path(where) / ROWS

        skips = safety.Skips()
        try:
            loaded = [r for _, _, r in safety.jsonl_records(path, "slate eval rows", skips)]
        except SkillosError as exc:
            raise SkillosError(f"{path}: not a slate eval run ({exc})") from None
        if skips:
            raise SkillosError(f"{path}: damaged ({skips.places[0]})")
        rows += [{**r, "arm": f"{Path(where).name}:{r['arm']}"} for r in loaded]
    return summarize(rows, alpha, power, n_boot)
