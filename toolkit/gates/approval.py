"""Approval before compute. An agent writes the plan it proposes (`skillos plan CONFIG`: the
hypothesis, arms, seeds, metric, the MDE and the games it needs, the cost the step plan
estimates, and the config hash); a person approves it at a terminal (`skillos approve PLAN`,
recorded in the ledger with who and when); a launch that spends GPUs is refused by the
`approved-plan` check unless its config hash has an approved plan.

`skillos gate check` (and `plan` itself) shows a missing approval as a WARN: the plan is written
before it is approved. At a launch it is a FAIL, overridable as every check is (recorded)."""

from __future__ import annotations

import hashlib
import json

from skillos.evals import prices
from skillos.checking import Context, Result, read_ledger, static
from skillos.gates.core import Report
from skillos.registry import compute_of
from skillos.config.derived import server_gpus
from skillos.config.matrix import expand
from skillos.devices import gpu_launch, gpus_per_machine, undeclared
from skillos.evals import stats
from skillos.evals.arms import learns, plays
from skillos.evals.distributed import plan
from skillos.gates.learning import vouching
from skillos.ledger import Ledger
from skillos.ledger.experiments import success_metric
from skillos.ledger.store import default_path
from skillos.training.canary import line, trainer_key
from skillos.training.common.plan import step_plan

CHECK = "approved-plan"
# the person's step that clears approved-plan and api-cost (PLAN: the plan file `skillos plan` wrote)
APPROVE = {"owner": "person", "command": "skillos approve PLAN (at their terminal, never an agent)", "time": None}
GATES = (5,)  # the plan carries the MDE and the games it needs: a person reads them before compute
INCIDENT = "GPU-days spent on a plan only the agent had read"
PLAN_VERSION = 3  # 2: plan_hash (resources included) and gpu_reasons; 3: api_cost


@static
def approved_plan(ctx: Context) -> Result:
    cfg = ctx.cfg
    launch = gpu_launch(cfg)
    if not launch:
        return Result(CHECK, GATES, "SKIP", detail=f"no GPU is used: {launch.why}")
    digest = cfg.plan_hash()  # a run of a matrix: the matrix's plan
    found = read_ledger(ctx, lambda book: book.approval(digest))
    if found is not None:
        return Result(CHECK, GATES, "PASS", detail=f"plan {found['plan_sha256'][:8]} for plan hash {digest} "
                      f"approved by {found['actor']} at {found['created_at']} ({launch.why})")
    return Result(CHECK, GATES, "FAIL" if ctx.command else "WARN", incident=INCIDENT,
                  detail=f"no approved plan for plan hash {digest} ({launch.why}): write it with `skillos plan CONFIG` "
                  "and ask the person to approve it" + ("" if ctx.command else " (a launch is refused until then)"),
                  todo=APPROVE)


COST_CHECK = "api-cost"
COST_INCIDENT = "a paid API's quota burnt in minutes with no estimate and no person asked"


@static
def api_cost(ctx: Context) -> Result:
    """The cost gate: a launch whose paid API calls are estimated above compute.max_cost_usd, or at
    an unknown cost, needs an approved plan for its plan hash, as a GPU launch does
    (evals/prices.py: the estimate, its prices with their source and date)."""
    cfg = ctx.cfg
    est = paid_estimate(cfg, len(expand(cfg)))
    if not est["paid"]:
        return Result(COST_CHECK, GATES, "SKIP", detail="no paid API: every model section is local, the heuristic, "
                      "or a server on this machine", values=est)
    said = cost_line(est)
    keys = ("compute.max_cost_usd", "compute.prompt_tokens_per_call", "compute.completion_tokens_per_call")
    if est["within_budget"]:
        return Result(COST_CHECK, GATES, "PASS", "compute.max_cost_usd", cfg.compute.max_cost_usd,
                      "the estimate at most this", detail=said, reads=keys, values=est)
    digest = cfg.plan_hash()
    found = read_ledger(ctx, lambda book: book.approval(digest))
    if found is not None:
        return Result(COST_CHECK, GATES, "PASS", "compute.max_cost_usd", cfg.compute.max_cost_usd,
                      "the estimate at most this, or an approved plan", reads=keys, values=est,
                      detail=f"{said}; plan {found['plan_sha256'][:8]} approved by {found['actor']} at {found['created_at']}")
    return Result(COST_CHECK, GATES, "FAIL" if ctx.command else "WARN", "compute.max_cost_usd",
                  cfg.compute.max_cost_usd, "the estimate at most this, or an approved plan", COST_INCIDENT,
                  f"{said}: write the plan with `skillos plan CONFIG` and ask the person to approve it"
                  + ("" if ctx.command else " (a launch is refused until then)"), reads=keys, values=est, todo=APPROVE)


def paid_estimate(cfg, runs: int = 1) -> dict:
    """evals/prices.estimate with a training launch's executor calls a step from its step plan."""
    calls = None
    if cfg.training.is_set():
        calls = step_plan(cfg).executor_calls
    return prices.estimate(cfg, runs, calls)


def cost_line(est: dict) -> str:
    """The estimate in one line: the total against the budget, then each paid section."""
    total = "unknown" if est["usd"] is None else f"${est['usd']:.2f}"
    parts = [f"{r['section']} {r['backend']}:{r['model']} "
             + (f"${r['usd']:.2f} ({r['calls']} calls x ({r['prompt_tokens_per_call']} + "
                f"{r['completion_tokens_per_call']}) tokens at ${r['usd_per_mtok'][0]:g}/${r['usd_per_mtok'][1]:g} per "
                f"million, {r['price_source']})" if r["usd"] is not None else f"unknown ({r['reason']})")
             for r in est["roles"]]
    verdict = ("within" if est["within_budget"] else "over") if est["within_budget"] is not None else "unknown against"
    return (f"paid API cost {total}, {verdict} compute.max_cost_usd ${est['max_cost_usd']:g} ({est['basis']}): "
            + "; ".join(parts))


@static
def gpu_declared(ctx: Context) -> Result:
    """A launch that names no GPU and would put a model on one this process sees: its plan and
    approval count no GPU-hours, so it is refused before any weight moves."""
    why = undeclared(ctx.cfg)
    if why is None:
        return Result("gpu-declared", GATES, "PASS", "compute.gpu", ctx.cfg.compute.gpu, "the GPUs the launch uses",
                      detail="the GPUs this launch can use are the ones its config names (or it uses none)")
    return Result("gpu-declared", GATES, "FAIL", "compute.gpu", None, "the GPUs the launch uses",
                  "a launch the gates took for the CPU ran on the GPUs it found", why)


@static
def gpu_count(ctx: Context) -> Result:
    """A training launch's processes each need a GPU of their own: a plan that names fewer GPUs
    per machine than it runs processes costs the wrong GPU-hours and does not start."""
    cfg = ctx.cfg
    gpus = gpus_per_machine(cfg)
    if not cfg.training.is_set() or gpus is None or not compute_of(cfg).spends_gpus:
        return Result("gpu-count", GATES, "SKIP", detail="not a multi-GPU training launch that names its GPUs")

    per_machine = cfg.compute.num_processes // max(1, cfg.compute.num_machines)
    served = server_gpus(cfg)  # the trl server's and the model servers' GPUs, before training's
    need = per_machine + served
    detail = (f"{per_machine} training processes" + (f" + {served} server GPU(s)" if served else "")
              + f" per machine on {gpus} GPU(s) per machine")
    return Result("gpu-count", GATES, "PASS" if gpus >= need else "FAIL", "compute.gpu", cfg.compute.gpu,
                  f">= {need} GPUs per machine", "a plan costed for fewer GPUs than the launch takes",
                  detail if gpus >= need else f"{detail}: name at least {need} (compute.gpu TYPE:"
                  f"{need}), or run fewer processes")


def short_hash(text: str) -> str:
    """A plan file's name for people: the first 8 hex digits of its sha256."""
    return hashlib.sha256(text.encode()).hexdigest()[:8]


# What a person reads and approves: recomputed from the config at `skillos approve`, never taken
# from the plan file; a file whose values differ was edited or is stale, and is refused.
SHOWN = ("plan_hash", "config_hash", "experiment", "hypothesis", "kind", "arms", "control", "seeds", "runs",
         "metric", "mde", "mde_in_family", "games", "cost", "api_cost", "spends_gpus", "gpu_reasons", "ray")


def differences(written: dict, computed: dict) -> list[str]:
    """Each value a plan file shows that its config does not give, by its path in the plan:
    'games.total: the file says 12, the config gives 3821'."""
    out: list = []
    for key in SHOWN:
        _differ(key, written.get(key), computed.get(key), out)
    return out


def _differ(path: str, a, b, out: list) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            _differ(f"{path}.{key}", a.get(key), b.get(key), out)
    elif json.dumps(a, sort_keys=True, default=str) != json.dumps(b, sort_keys=True, default=str):
        out.append(f"{path}: the file says {_short(a)}, the config gives {_short(b)}")


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def plan_text(plan: dict) -> str:
    return json.dumps(plan, indent=1, sort_keys=True) + "\n"


def build(cfg, report: Report, config_path: str, sets: list, proposed_by: str) -> dict:
    """The plan of a config, from what the gates computed (the `mde` check) and the step plan."""

    mde = next((r.values for r in report.results if r.check == "mde" and r.values), {})
    learning = [arm for arm in cfg.eval.arms if learns(arm)]
    needed = mde.get("n_needed")
    runs = expand(cfg)
    per_run = cfg.env.n_games * len(cfg.eval.arms) + cfg.env.n_train_games * len(learning)

    launch = gpu_launch(cfg, cuda=0)  # what the config declares: the plan reads the same on any machine
    return {
        "plan": PLAN_VERSION, "config": config_path, "sets": list(sets), "config_hash": cfg.hash(),
        "plan_hash": cfg.plan_hash(),
        "experiment": cfg.experiment.name, "hypothesis": cfg.experiment.hypothesis,
        "kind": "train" if cfg.training.is_set() else "eval",
        "arms": list(cfg.eval.arms), "control": cfg.eval.control.arm, "seeds": seeds(cfg),
        "runs": [{"label": r.label, "values": r.values, "seed": r.seed} for r in runs] if len(runs) > 1 else [],
        "metric": success_metric(cfg),
        "mde": mde.get("mde"), "mde_in_family": _family_mde(cfg, mde, len(runs)), "mde_basis": {k: mde.get(k) for k in ("n", "discordance", "discordance_assumed",
                                                                      "alpha", "power", "expected_effect")},
        "games": {"held_out_per_arm": cfg.env.n_games, "arms": len(cfg.eval.arms),
                  "train_per_learning_arm": cfg.env.n_train_games if learning else 0,
                  "runs": len(runs), "total": per_run * len(runs), "trials_per_held_out_game": cfg.eval.trials,
                  "plays_total": plays(cfg) * len(runs),
                  "needed_for_expected_effect": needed,
                  "needed_reason": None if needed is not None else "experiment.expected_effect is not set"},
        "cost": cost(cfg, len(runs)), "api_cost": paid_estimate(cfg, len(runs)),
        "spends_gpus": bool(launch), "gpu_reasons": launch.reasons,
        **({"ray": _ray_plan(cfg)} if compute_of(cfg).distributes else {}),  # where each arm's task runs
        "gates": {"counts": report.counts(), "failed": [r.check for r in report.failed]},
        "proposed_by": proposed_by,
        "before_launch": before_launch(report, config_path), "last_canary": last_canary(cfg),
    }


def before_launch(report: Report, config_path: str | None) -> list[dict]:
    """What stands between this plan and its launch, in the order to do it: each failed check (and
    each warning with a step that clears it) with who owns it (the agent, or the person), the
    exact command, and its time on this machine where measured; then the dry-run checks, which
    only a launch or `gate check --dry-run` runs."""
    config = config_path or "CONFIG"
    out = []
    for r in report.results:
        if not ((r.status == "FAIL" and not r.overridden) or (r.status == "WARN" and r.todo)):
            continue
        todo = r.todo or {"owner": "agent", "time": None,
                          "command": f"fix {r.key or 'the config'} in {config} (skillos explain {r.key}), or ask the "
                                     f"person for --override {r.check}=\"reason\"" if r.key else
                                     f"fix the config ({r.check}), or ask the person for --override {r.check}=\"reason\""}
        out.append({"check": r.check, "gate": r.gate, "status": r.status, **todo, "why": r.detail})
    out.append({"check": "dry-run", "gate": None, "status": "NOT RUN", "owner": "agent", "time": None,
                "command": f"skillos gate check {config} --dry-run --json",
                "why": "the checks that execute code (tool surface, reward arithmetic, real rollouts, split hashes) "
                       "run only there and at the launch"})
    merged: dict = {}
    for item in out:  # one step clears every check it answers (two splits' data, approval and cost)
        same = merged.get((item["owner"], item["command"]))
        if same is None:
            merged[(item["owner"], item["command"])] = item
        elif item["check"] not in same["check"].split(", "):
            same["check"] += f", {item['check']}"
    return sorted(merged.values(), key=lambda item: item["owner"] == "person")  # a person's steps last (approval, an override)


def last_canary(cfg) -> dict | None:
    """The newest canary this machine's ledger recorded for the trainer a training config launches
    (None: not a training launch): passed or not, its summary line, and whether it still covers
    the code installed now."""
    if not cfg.training.is_set():
        return None

    key = trainer_key(cfg)
    if not default_path().is_file():
        return {"trainer": key, "id": None, "reason": "no ledger on this machine"}
    with Ledger.read_only(default_path()) as book:
        rows = book.canaries(key)
    if not rows:
        return {"trainer": key, "id": None, "reason": "this ledger holds no canary of it"}
    row = rows[-1]
    try:
        result = json.loads(row["result_json"])
        covers, said = vouching(key, [{**row, "result": result}])[0] is not None, line(result)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # a damaged row: said, not guessed
        return {"trainer": key, "id": row["id"], "reason": f"its recorded result is unreadable ({type(exc).__name__})"}
    return {"trainer": key, "id": row["id"], "passed": bool(row["passed"]), "quick": bool(row["quick"]),
            "created_at": row["created_at"], "covers_current_code": covers, "line": said, "reason": None}


def _ray_plan(cfg) -> dict:
    return plan(cfg)


def _family_mde(cfg, mde: dict, runs: int) -> dict | None:
    """The MDE once every comparison of every run is one family: at Holm's strictest step (alpha
    over the family's size), which is what the first claim must clear. None for a family of one."""
    size = runs * max(1, len(cfg.eval.arms) - 1)
    if size <= 1 or not mde:
        return None
    return {"family_size": size, "alpha": mde["alpha"] / size,
            "mde": stats.mde(mde["n"], mde["discordance"], mde["alpha"] / size, mde["power"])}


def seeds(cfg) -> dict:
    """The seeds the launch uses, by key: the replicates (experiment.seeds) when set, else the game
    seed, and the training seed when it trains."""
    if cfg.experiment.seeds is not None:
        return {"experiment.seeds": list(cfg.experiment.seeds)}
    out = {"env.seed": cfg.env.seed}
    if cfg.training.is_set():
        out["training.seed"] = cfg.training.seed
    return out


def cost(cfg, runs: int = 1) -> dict:
    """What the step plan (training/common/plan.py) says a training launch costs, for all its `runs` (a
    matrix x seeds); None + reason where it cannot (an eval; a step's GPU time unmeasured)."""
    if not cfg.training.is_set():
        return {"gpu_hours": None, "wall_hours": None,
                "reason": "an eval: its cost is the games above; the step plan estimates training only"}

    step, steps = step_plan(cfg), (cfg.training.max_steps or 0) * runs or None
    per_machine = gpus_per_machine(cfg)
    gpus = per_machine * cfg.compute.num_machines if per_machine else None
    wall = step.step_seconds * steps / 3600 if step.step_seconds is not None and steps else None
    reasons = [why for why, missing in (
        ("training.max_steps is not set", not steps),
        ("compute.gpu_seconds_per_step is not measured", step.step_seconds is None),
        ("compute.gpu names no GPUs", gpus is None)) if missing]
    return {"steps": steps, "step_seconds": step.step_seconds, "wall_hours": wall, "gpus": gpus,
            "gpu_hours": wall * gpus if wall is not None and gpus else None,
            "rollout_hours_at_least": step.rollout_seconds * steps / 3600 if steps else None,
            "executor_calls": step.executor_calls * steps if steps else None,
            "latency_assumed": not step.latency_stated, "reason": "; ".join(reasons) or None}
