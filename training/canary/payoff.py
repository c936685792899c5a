"""A miniature's payoff table: can it be won without reading the input?

Before a canary trains anything it plays, on its held-out tasks, every *constant answer* (one the
policy could give whatever its input: each single skill, every combination the tool allows, no
skill; for the selector each name or naming rule a listing alone supports) and the
*input-dependent answer* (the right one for each task's stratum), and tabulates held-out success
per stratum. A trainer that ignored its input could at best learn the best constant answer; the
miniature shows something about reading the input only if every constant answer loses to the
input-dependent one in some stratum by a margin its n can detect: paired by task, the exact
McNemar test of evals/stats.py at the schema's alpha. Otherwise the canary refuses to run
(`require`), before any compute is spent on it.

The table is a fact about the miniature (its executor, its games, its answers), not about a model:
the canary prints it first and keeps it in `--json` as `payoff`.
"""

from __future__ import annotations

from skillos.config.eval import EvalConfig
from skillos.errors import SkillosError
from skillos.evals import stats

INPUT_DEPENDENT = "input-dependent"


def table(answers: dict, input_dependent: dict, strata: dict) -> dict:
    """answers: constant answer -> {task: True/False/None}; input_dependent: {task: ...};
    strata: task -> stratum. Per stratum each answer's successes of measured tasks, and per
    constant answer the stratum where the input-dependent answer beats it most (b/c, exact p)
    and whether that margin is detectable at alpha."""
    e = EvalConfig()
    names = sorted(set(strata.values()))
    tasks = {s: [t for t in sorted(strata) if strata[t] == s] for s in names}

    def rates(outcomes: dict) -> dict:
        out = {}
        for s in names:
            measured = [outcomes.get(t) for t in tasks[s] if outcomes.get(t) is not None]
            out[s] = {"won": sum(bool(x) for x in measured), "of": len(measured),
                      "unmeasured": len(tasks[s]) - len(measured)}
        return out

    rows, margins = {INPUT_DEPENDENT: rates(input_dependent)}, {}
    for name, outcomes in answers.items():
        rows[name] = rates(outcomes)
        best = None
        for s in names:
            c = stats.compare({t: outcomes.get(t) for t in tasks[s]}, {t: input_dependent.get(t) for t in tasks[s]},
                              names=(INPUT_DEPENDENT, name), alpha=e.alpha, power=e.power, n_boot=e.bootstrap)
            row = {"stratum": s, "n": c.n_paired, "b": c.b, "c": c.c, "p": c.p_value,
                   "detectable": c.p_value is not None and c.b > c.c and c.p_value < e.alpha}
            if best is None or (row["detectable"], row["b"] - row["c"]) > (best["detectable"], best["b"] - best["c"]):
                best = row
        margins[name] = best
    beaten = all(m is not None and m["detectable"] for m in margins.values())
    return {"strata": names, "tasks": {s: len(tasks[s]) for s in names}, "success": rows, "margin": margins,
            "alpha": e.alpha, "every_constant_loses": beaten and bool(margins),
            "best_constant": best_constant(answers, rows)}


def best_constant(answers: dict, rows: dict) -> dict | None:
    """The constant answer with the most held-out successes over every stratum (ties: the first by
    name), with its outcome on each task: the most a trainer that ignored its input could learn,
    which a canary's trained runs must beat (training/canary RULE)."""
    if not answers:
        return None
    won = {name: sum(r["won"] for r in rows[name].values()) for name in answers}
    name = max(sorted(answers), key=lambda n: won[n])
    return {"answer": name, "won": won[name], "of": sum(r["of"] for r in rows[name].values()),
            "outcomes": dict(answers[name])}


def lines(payoff: dict) -> list[str]:
    """The table as a person reads it: one line per answer, then the verdict."""
    out = [f"payoff table on the held-out tasks (successes per stratum; {INPUT_DEPENDENT}: the right answer "
           "for each task's stratum; the rest: constant answers a trainer that ignored its input could learn):"]
    for name, row in payoff["success"].items():
        cells = ", ".join(f"{s} {r['won']}/{r['of']}" + (f" ({r['unmeasured']} unmeasured)" if r["unmeasured"] else "")
                          for s, r in row.items())
        m = payoff["margin"].get(name)
        loses = "" if m is None else (f"; loses {m['stratum']} b/c {m['b']}/{m['c']}, p {_p(m['p'])}"
                                      + ("" if m["detectable"] else f": NOT detectable at alpha {payoff['alpha']}"))
        out.append(f"  {name}: {cells}{loses}")
    out.append("  every constant answer loses a stratum detectably: "
               + ("yes" if payoff["every_constant_loses"] else "NO"))
    best = payoff.get("best_constant")
    if best:
        out.append(f"  the best constant answer over every stratum: {best['answer']} ({best['won']}/{best['of']}): "
                   "the trained runs must beat it (the pass rule)")
    return out


def require(payoff: dict, canary: str) -> None:
    """A one-line refusal unless every constant answer loses a stratum detectably."""
    if payoff["every_constant_loses"]:
        return
    weak = [(n, m) for n, m in payoff["margin"].items() if m is None or not m["detectable"]]
    # the one reading the input beats by least: the constant answer that comes closest to it
    weak.sort(key=lambda nm: -1e9 if nm[1] is None else nm[1]["b"] - nm[1]["c"])
    name, m = weak[0] if weak else ("(none)", None)
    said = "no constant answer was tabulated" if not weak else (
        f"the constant answer {name!r} loses no stratum by a margin its n can detect at alpha {payoff['alpha']}"
        + ("" if m is None else f" (best: {m['stratum']} b/c {m['b']}/{m['c']}, p {_p(m['p'])})"))
    raise SkillosError(f"canary {canary}: its miniature can be won without reading the input: {said}; "
                       "a pass would not show that the trainer reads its input (the payoff table is in "
                       "docs/canaries.md)")


def _p(p) -> str:
    return "unmeasured" if p is None else f"{p:.2g}"
