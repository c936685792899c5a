"""The recipe learns: a launch that spends GPUs needs a passing learning canary (training/canary)
of its trainer, for the code that trainer runs now. The reference reproduction trained for days
on recipes whose reward carried no signal; a canary shows, on a CPU miniature and beside a
negative control, that the trainer's code moves the number it exists to move.

A canary vouches for what it ran (training/canary/identity.py): the check recomputes each passing
canary's identity (every module it imported, its config, the training libraries) against the code
installed now, and passes on the newest one that still holds."""

from __future__ import annotations

from skillos.checking import Context, Result, read_ledger, static, training_only
from skillos.registry import trainer_of
from skillos.devices import gpu_launch
from skillos.registry import CANARIES
from skillos.training.canary import canary, estimate, trainer_key
from skillos.training.canary.identity import changes, config_digest, launch_modules

GATES = (6,)  # if training does not move the number, the recipe is wrong
INCIDENT = ("GPU-days spent on a recipe that looked healthy and learned nothing (task reward +0.035 over "
            "60 steps while entropy collapsed)")


@static
@training_only(*GATES)
def recipe_learns(ctx: Context) -> Result:
    check, cfg = "recipe-learns", ctx.cfg
    launch = gpu_launch(cfg)
    if not launch:
        return Result(check, GATES, "SKIP", detail=f"no GPU is used: {launch.why}")
    key = trainer_key(cfg)
    credit = cfg.skillgate.selector_credit if trainer_of(cfg).selector_credit else None
    vouched = (f" (profile {credit} gives the selection no credit of its own: the method's canary on the same "
               "code vouches for it)") if credit and key != f"selector:{credit}" else ""
    name = key.split(":")[0]
    if name not in CANARIES:
        return Result(check, GATES, "FAIL", "skillgate.trainer", key, "a trainer with a learning canary", INCIDENT,
                      f"no canary exists for trainer {key!r} (canaries: {', '.join(CANARIES.names())}); nothing has shown "
                      "that it learns")
    rows = read_ledger(ctx, lambda book: book.passing_canaries(key)) or []
    found, stale = vouching(key, rows)
    option = canary(name).variant_option
    command = f"skillos canary {name}" + (f" {option} {key.split(':', 1)[1]}" if ":" in key else "")
    if found is None:
        why = (f"the newest passing canary of {key} (#{stale[0]['id']}, code {stale[0]['code_hash']}) no longer "
               f"covers the code: {_changed(stale[1])}" if stale else
               f"the ledger holds no passing canary of {key}")
        refused = canary(name).refused
        if refused:  # running it would spend its time on a refusal: say so, and who can decide
            return Result(check, GATES, "FAIL", "skillgate.trainer", key, "a passing canary for the code as it is",
                          INCIDENT, f"{why} ({launch.why}); no canary of this skillos can pass: `{command}`'s "
                          f"{refused}; only a person's --override recipe-learns=\"reason\" (recorded) launches it",
                          todo={"owner": "person", "command": "the launch again with --override recipe-learns=\"reason\" "
                                "(a person's decision, recorded), or a rebuilt miniature", "time": None})
        took = estimate(key, False, read_ledger(ctx, lambda book: book.canary_timings(key, False)) or [])
        return Result(check, GATES, "FAIL", "skillgate.trainer", key, "a passing canary for the code as it is",
                      INCIDENT, f"{why} ({launch.why}); run `{command}` (its wall time {took}), then launch again",
                      todo={"owner": "agent", "command": f"{command} --json", "time": took})
    ran = found["result"]["identity"]["modules"]
    unvouched = {m: why for m, why in launch_modules(cfg).items() if m not in ran}
    if unvouched:
        said = "; ".join(f"{m} ({why})" for m, why in unvouched.items())
        return Result(check, GATES, "FAIL", "skillgate.trainer", key, "a passing canary that ran what the launch runs",
                      INCIDENT, f"canary #{found['id']} passed for code {found['code_hash']}, but the launch will run "
                      f"code it never ran: {said}; no canary of this skillos runs it yet: launch without that switch, "
                      f"or a person's --override recipe-learns=\"reason\" (recorded)")
    return Result(check, GATES, "PASS", "skillgate.trainer", key, "a passing canary for the code as it is", INCIDENT,
                  f"canary #{found['id']}{vouched} passed for code {found['code_hash']} on {found['created_at'][:10]} "
                  f"and still covers it ({len(found['result']['identity']['modules'])} modules it ran unchanged): "
                  f"{found['metric']} {found['before_rate']:.0%} -> {found['after_rate']:.0%}, b/c "
                  f"{found['b']}/{found['c']}, look {found['looks']} at its sealed held-out games; control b/c "
                  f"{found['control_b']}/{found['control_c']} ({found['control_verdict']})")


def vouching(key: str, rows: list) -> tuple[dict | None, tuple | None]:
    """(the newest of `rows` whose identity still holds for the code now, or None; (the newest
    row, what changed since it) when none holds and there was one)."""

    name, _, variant = key.partition(":")
    chosen, configs, stale = canary(name), {}, None
    for row in rows:
        quick = bool(row["result"].get("quick"))
        if quick not in configs:
            configs[quick] = config_digest(chosen.config(quick, variant or None))
        ident = row["result"].get("identity")
        differ = changes(ident, configs[quick])
        if not differ:
            differ = [f"it does not record running {m}" for m in chosen.ran if m not in ident["modules"]]
        if not differ:
            return row, None
        stale = stale or (row, differ)
    return None, stale


def _changed(differ: list) -> str:
    return ", ".join(differ[:4]) + (f" and {len(differ) - 4} more" if len(differ) > 4 else "")


def standing(ledger) -> list[dict]:
    """Per trainer with a canary in the ledger: its canaries run and passed (by their own
    verdicts), the newest passing one, and the one that vouches for the code installed now as
    gate 6 decides it (`vouching`: None, with what changed since the newest, when none does) —
    `skillos ledger canaries`."""
    out = []
    for trainer in dict.fromkeys(row["trainer"] for row in ledger.canaries()):
        passing = ledger.passing_canaries(trainer)
        entry = {"trainer": trainer, "canaries": len(ledger.canaries(trainer)), "passed": len(passing),
                 "last_passing": passing[0]["id"] if passing else None,
                 "last_passing_code_hash": passing[0]["code_hash"] if passing else None,
                 "vouching": None, "code_hash": None, "covers_current_code": False if passing else None,
                 "changed": []}
        if passing and trainer.split(":")[0] not in CANARIES:
            entry["changed"] = ["this skillos has no such canary"]
        elif passing:
            found, stale = vouching(trainer, passing)
            if found is not None:
                entry.update(vouching=found["id"], code_hash=found["code_hash"], covers_current_code=True)
            else:
                entry["changed"] = stale[1]
        out.append(entry)
    return out
