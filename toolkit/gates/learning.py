"""The recipe learns: a launch that spends GPUs needs a passing learning canary (training/canary)
of its trainer, for the code that trainer runs now. The reference reproduction trained for days
on recipes whose reward carried no signal; a canary shows, on a CPU miniature and beside a
negative control, that the trainer's code moves the number it exists to move."""

from __future__ import annotations

from skillos.gates.core import Context, Result, read_ledger, static, training_only

GATES = (6,)  # if training does not move the number, the recipe is wrong
INCIDENT = ("GPU-days spent on a recipe that looked healthy and learned nothing (task reward +0.035 over "
            "60 steps while entropy collapsed)")


@static
@training_only(*GATES)
def recipe_learns(ctx: Context) -> Result:
    from skillos.training.canary import CANARIES, canary, code_hash, trainer_key

    check, cfg = "recipe-learns", ctx.cfg
    if not cfg.compute.spends_gpus:
        return Result(check, GATES, "SKIP", detail="compute is the local CPU (no GPU is spent)")
    key = trainer_key(cfg)
    credit = cfg.skillgate.selector_credit if cfg.skillgate.trainer == "selector" else None
    vouched = (f" (profile {credit} gives the selection no credit of its own: the method's canary on the same "
               "code vouches for it)") if credit and key != f"selector:{credit}" else ""
    name = key.split(":")[0]
    if name not in CANARIES:
        return Result(check, GATES, "FAIL", "skillgate.trainer", key, "a trainer with a learning canary", INCIDENT,
                      f"no canary exists for trainer {key!r} (canaries: {', '.join(CANARIES)}); nothing has shown "
                      "that it learns")
    digest = code_hash(canary(name).files)
    found = read_ledger(ctx, lambda book: book.passing_canary(key, digest))
    command = f"skillos canary {name}" + (f" --credit {key.split(':', 1)[1]}" if ":" in key else "")
    if found is None:
        return Result(check, GATES, "FAIL", "skillgate.trainer", key, f"a passing canary for code {digest}", INCIDENT,
                      f"the ledger holds no passing canary of {key} for the current code ({digest}); run "
                      f"`{command}` (~30 min on 2 CPU cores), then launch again")
    return Result(check, GATES, "PASS", "skillgate.trainer", key, f"a passing canary for code {digest}", INCIDENT,
                  f"canary #{found['id']}{vouched} passed for code {digest} on {found['created_at'][:10]}: {found['metric']} "
                  f"{found['before_rate']:.0%} -> {found['after_rate']:.0%}, b/c {found['b']}/{found['c']}; "
                  f"control b/c {found['control_b']}/{found['control_c']} ({found['control_verdict']})")

