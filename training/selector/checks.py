"""The selector method's own launch-gate checks (SkillGate): a slate folder that fills every
slate, a credit profile that does what its name says, and real slate rollouts through the tools
TRL will publish. Found by the gates through the method's registry entry (skillos.registry.METHODS).
"""

from __future__ import annotations

import tempfile

from skillos.checking import Context, Result, dry_run, games, static, train_pool, training_only, trains_with
from skillos.errors import SkillError, SkillosError
from skillos.evals.envs.alfworld.scenes import TASK_TYPES
from skillos.evals.envs.registry import environment
from skillos.registry import trainer_of
from skillos.repo import SkillRepo
from skillos.training.common.trl_compat import published_tools
from skillos.training.selector.credit import CREDITED

ROLLOUTS = 2  # real slate rollouts in a dry run

@static
def skillgate_slate(ctx: Context) -> Result:
    """Selector training needs a slate folder that fills the configured slate for every task type:
    an oracle, and enough relevant, misleading (built from the oracle) and irrelevant skills."""
    slate_domain = environment("slate")

    check, gates, g = "skillgate-slate", (2,), ctx.cfg.skillgate
    if not trains_with(ctx.cfg, __name__) and g.selector_credit == "mixed_task_reward":
        return Result(check, gates, "SKIP", detail=f"skillgate.trainer {g.trainer} reads no slate")
    incident = "selector credit without an oracle on the slate credits no read at all"
    if not g.slate_repo:
        return Result(check, gates, "FAIL", "skillgate.slate_repo", None, "a slate skill folder", incident,
                      f"skillgate.selector_credit {g.selector_credit} / trainer {g.trainer} needs a slate")
    path = ctx.path(g.slate_repo)
    want = f"{g.slate_size}-skill slates for every task type"
    try:
        repo = SkillRepo.load(path)
    except (SkillError, OSError) as exc:
        return Result(check, gates, "FAIL", "skillgate.slate_repo", str(path), "a readable skill folder",
                      incident, f"cannot load it: {exc}")
    types = ctx.cfg.env.task_types or TASK_TYPES  # the types the run plays (env.task_types), else all
    missing = slate_domain.missing_oracles(repo, types)
    if missing:
        return Result(check, gates, "FAIL", "skillgate.slate_repo", str(path), want,
                      incident, f"no skill has metadata.task_type {', '.join(missing)}: a slate with no oracle")
    try:
        built = slate_domain.with_misleading(repo, g.n_misleading)
    except SkillosError as exc:
        return Result(check, gates, "FAIL", "skillgate.slate_repo", str(path), want, incident, str(exc))
    needed = {"relevant": g.n_relevant, "misleading": g.n_misleading, "irrelevant": g.n_irrelevant}
    short = [f"{t}: {len(pool)} {c} of {needed[c]}" for t in types
             for c, pool in slate_domain.category_pools(built, t).items() if c in needed and len(pool) < needed[c]]
    if short:
        return Result(check, gates, "FAIL", "skillgate.slate_repo", str(path), want, incident,
                      "the folder cannot fill the slates (" + "; ".join(short) + ")")
    return Result(check, gates, "PASS", "skillgate.slate_repo", str(path), want, detail=(
        f"per slate: 1 oracle, {g.n_relevant} relevant, {g.n_misleading} misleading, {g.n_irrelevant} irrelevant"))


@static
def skillgate_credit(ctx: Context) -> Result:
    check, gates, g = "skillgate-credit", (1,), ctx.cfg.skillgate
    if not trainer_of(ctx.cfg).selector_credit and g.selector_credit == "mixed_task_reward":
        return Result(check, gates, "SKIP", "skillgate.selector_credit", g.selector_credit,
                      detail=f"skillgate.trainer {g.trainer}: no selector credit")
    incident = "a credit variant that silently did something else than its name"
    generations = ctx.cfg.training.num_generations
    problem = (f"skillgate.trainer {g.trainer} has no selector credit, so the profile would be ignored"
               if not trainer_of(ctx.cfg).selector_credit else
               "task-mask-only is the control: selector_coef must be exactly 0"
               if g.selector_credit == "task-mask-only" and g.selector_coef != 0 else
               f"{g.selector_credit} credits the selection spans: selector_coef must be > 0 (0 is task-mask-only)"
               if g.selector_credit in CREDITED and g.selector_coef <= 0 else
               f"hybrid_slate pairs each rollout with its twin without the oracle: training.num_generations must "
               f"be even, got {generations}"
               if g.selector_credit == "hybrid_slate" and generations is not None and generations % 2 else "")
    detail = problem or ("outcome only: TRL's advantage on every token, selector_coef unused"
                         if g.selector_credit not in CREDITED + ("task-mask-only",) else "")
    return Result(check, gates, "FAIL" if problem else "PASS", "skillgate.selector_coef", g.selector_coef,
                  f"{g.selector_credit} with trainer selector", incident, detail)


@dry_run
@training_only(2, 3)
def selector_rollouts(ctx: Context) -> Result:
    """Real slate rollouts on the train pool through the tools TRL will publish: reads of the
    oracle and a misleading skill are recorded with their roles (no role where the profile shows
    no oracle: no_skill's empty slate, hybrid_slate's twin), an action steps the real game, the
    episode is measured, and a held-out game is refused."""
    check, gates, cfg = "selector-rollouts", (2, 3), ctx.cfg
    if not trains_with(cfg, __name__):
        return Result(check, gates, "SKIP", detail=f"skillgate.trainer {cfg.skillgate.trainer} plays no slates")
    slate_domain = environment("slate")

    incident = "selector credit computed from reads the environment never recorded"
    tools = published_tools(slate_domain.SlateEnv)
    if tools != ["act", "read_skill"]:
        return Result(check, gates, "FAIL", "tools", tools, ["act", "read_skill"], incident)
    pool = train_pool(ctx)[:ROLLOUTS]
    with tempfile.TemporaryDirectory() as tmp:
        setup = slate_domain.make_slate_setup(cfg, pool, tmp)
    problems, lines = [], []
    for game in pool:
        env = slate_domain.SlateEnv(setup)
        env.reset(game_id=game.id)
        slate = setup.slates[game.id]
        env.read_skill(slate.oracle)
        env.read_skill(next(iter(slate.misleading + slate.irrelevant + slate.relevant), slate.oracle))
        env.act(slate_domain.admissible(env)[0])
        record = slate_domain.episode_record(env)
        if record["success"] is None:
            problems.append(f"{game.id} unmeasured: {record['unmeasured_reason']}")
        if record["read_roles"][:1] != ["oracle" if env.with_oracle else None] or len(record["reads"]) != 2:
            problems.append(f"{game.id}: reads recorded as {record['read_roles']}")
        lines.append(f"{game.id}: {len(record['slate'])} of {len(slate.order)} skills shown, reads {record['read_roles']}")
    held_out = games(ctx, cfg.env.split, cfg.env.n_games)[0]
    try:
        slate_domain.SlateEnv(setup).reset(game_id=held_out.id)
        problems.append("a training rollout could load a held-out game")
    except KeyError:
        lines.append("held-out games refused")
    return Result(check, gates, "FAIL" if problems else "PASS", "slate rollouts", len(pool), "measured, reads recorded",
                  incident, "; ".join(problems + lines))
