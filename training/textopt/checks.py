"""The text-space optimizer's own launch-gate check (SkillOpt, `skillos optimize`): the smallest gain
its k·SE gate can accept, planned before anything is spent. Found by the gates through the
method's registry entry (skillos.registry.METHODS).
"""

from __future__ import annotations

from skillos.checking import Context, Result, static
from skillos.evals import stats

@static
def optimize_power(ctx: Context) -> Result:
    """skillos optimize: the smallest gain the k·SE gate can accept on n_validation tasks, planned
    before spending (the run prints it again from its A/A variance before any candidate)."""
    check, gates = "optimize-power", (5,)
    if not (ctx.command == "optimize" or (ctx.command is None and "optimize" in ctx.cfg.declared)):
        return Result(check, gates, "SKIP", detail="not an optimize launch")
    o, e = ctx.cfg.optimize, ctx.cfg.experiment
    incident = "8 of 8 candidates rejected at +1 to +3 of 30: gains the gate could never accept"
    if o.gate.mode == "strict":
        return Result(check, gates, "PASS", "optimize.gate.mode", "strict", "any positive gain", incident)

    def smallest(n: int) -> float:
        if e.expected_discordance is not None:
            return stats.smallest_acceptable_gain(n, o.gate.k, discordance=e.expected_discordance)
        return stats.smallest_acceptable_gain(n, o.gate.k, noise=0.0)

    gain = smallest(o.n_validation)
    basis = (f"experiment.expected_discordance {e.expected_discordance:g}" if e.expected_discordance is not None
             else "no noise at all, the best case; set experiment.expected_discordance from a pilot")
    detail = (f"the gate (k = {o.gate.k:g}) accepts no gain below {gain:.1%} of n_validation = "
              f"{o.n_validation} tasks ({basis})")
    if e.expected_effect is None:
        return Result(check, gates, "WARN", "experiment.expected_effect", None, f">= {gain:.3g}", incident,
                      f"{detail}; the hypothesis declares no gain to compare it with")
    if e.expected_effect >= gain:
        return Result(check, gates, "PASS", "experiment.expected_effect", e.expected_effect,
                      f">= {gain:.3g}", incident, detail)
    needed = next((n for n in range(o.n_validation, 100_000) if smallest(n) <= e.expected_effect), None)
    return Result(check, gates, "FAIL", "experiment.expected_effect", e.expected_effect, f">= {gain:.3g}",
                  incident, f"{detail}: the declared gain would be rejected by construction; "
                  f"raise optimize.n_validation to {needed} or lower optimize.gate.k")
