"""Text renderings of the library's reports for the CLI: one line per fact, unwrapped (agents
grep them). Every verdict word comes from `evals.stats.verdicts`; nothing here decides a claim."""

from __future__ import annotations


def _pts(x) -> str:
    return "unmeasured" if x is None else f"{100 * x:+.1f} pts"


def _p(x) -> str:
    return "unmeasured" if x is None else f"{x:.3g}"


def _ci(k: dict) -> str:
    if k.get("ci_low") is None or k.get("ci_high") is None:
        return "unmeasured"
    return f"[{100 * k['ci_low']:+.1f}, {100 * k['ci_high']:+.1f}] pts"


def compare_lines(result: dict) -> list[str]:
    c, lines = result["control"], []
    d = c["denominators"]
    lines.append(f"control run #{c['run_id']} ({c['arm']} of experiment #{c.get('experiment_id')} "
                 f"{c.get('experiment')}, env {c.get('env')}; {c['age_days']:.1f} days old, max "
                 f"{result['max_age_days']:g}): {d['successes']}/{d['measured']} measured of "
                 f"{d['attempted']} common games ({d['unmeasured']} unmeasured, "
                 f"{d['coerced_actions']} coerced actions)")
    f = result["family"]
    lines.append(f"family {f['name'] or 'of the compared runs experiments'}: {f['size']} run(s) "
                 f"{f['runs']}, Holm-corrected at alpha {result['alpha']}")
    for arm in result["arms"]:
        d, k = arm["denominators"], arm["comparison"]
        mde = "unmeasured" if k["mde"] is None else f"{100 * k['mde']:.1f} pts"
        lines.append(f"run #{arm['run_id']} ({arm['arm']} of experiment #{arm.get('experiment_id')} "
                     f"{arm.get('experiment')}, env {arm.get('env')}): {d['successes']}/{d['measured']} measured "
                     f"of {d['attempted']} ({d['unmeasured']} unmeasured, {d['coerced_actions']} "
                     f"coerced); paired n={k['n_paired']} (dropped {k['n_dropped']}); diff "
                     f"{_pts(k['difference'])}, 95% CI {_ci(k)}; b/c {k['b']}/{k['c']}; McNemar p {_p(k['p_value'])}, "
                     f"Holm {_p(k['p_holm'])}, BH {_p(k['p_bh'])}; MDE {mde}")
        lines.append(f"  verdict: {arm['verdict']['line']}")
    return lines


def sweep_lines(summary: dict) -> list[str]:
    lines = []
    for r in summary["rows"]:
        mde = "unmeasured" if r["mde"] is None else f"{100 * r['mde']:.1f} pts"
        lines.append(f"step {r['step']:>6} {r['repo']}: {_pts(r['difference'])} (MDE {mde}, "
                     f"paired n={r['n_paired']}): {r['verdict']['line']}")
        if r.get("note"):
            lines.append(f"  note: {r['note']}")
    if summary["best"]:
        lines.append(f"best of held-out: {summary['best']} — {summary['caveat']}")
    lines.append(f"lift vs step: {summary['png']}")
    return lines


def transfer_lines(family: dict) -> list[str]:
    """One line per direction and repo of a cross-domain sweep, judged in one family."""
    return [f"{r['source_env'] or '?'} -> {r['target_env']} {r['repo']}: {_pts(r['difference'])} vs its "
            f"control, paired n={r['n_paired']}: {r['verdict_family']['line']}" for r in family["rows"]]


def optimize_lines(report: dict) -> list[str]:
    scored = report.get("scored_on", {})
    lines = [f"scored on {scored.get('split')}: the {scored.get('role')}, {scored.get('n_games')} games, "
             f"content hash {scored.get('content_hash')}"]
    for arm in ("seed", "best"):
        a = report[arm]
        rate = "unmeasured" if a["success_rate"] is None else f"{a['success_rate']:.1%}"
        lines.append(f"{arm}: {a['successes']}/{a['measured']} measured of {a['attempted']} sealed "
                     f"test games ({rate}; {a['unmeasured']} unmeasured)")
    c = report["comparison"]
    if c["difference"] is not None:
        lines.append(f"best - seed: {c['difference']:+.1%}, b/c = {c['b']}/{c['c']}, 95% CI "
                     f"[{c['ci_low']:+.1%}, {c['ci_high']:+.1%}], n = {c['n_paired']}")
    lines.append(f"verdict: {report['verdict']}")
    lines.append(f"best skills: {report['best_skill']} ({report['best_skills']} skills)")
    return lines


def train_lines(summary: dict) -> list[str]:
    if summary.get("backend", "local") != "local":
        return [f"{summary['backend']} launch exited {summary['returncode']}"]
    return [f"trained {len(summary['steps'])} steps; checkpoints: "
            f"{', '.join(summary['checkpoints']) or 'none'}"]
