"""Does a skill transfer to a real coding agent? `skillos sleep transfer SKILL --tasks FILE`.

SkillOpt claims that a skill optimized against one executor helps the agents people use. This is
the execution harness that tests it: each reviewed task (sleep's task file: a prompt and its
checks) is run by a coding-agent CLI non-interactively, in a fresh temporary workspace, once with
the skill installed where that agent discovers a project's skills (the folder `npx skills add`
installs to: `.claude/skills/NAME/SKILL.md`, `.codex/skills/NAME/SKILL.md`) and once without; the
agent's answer is graded by the task's rule checks, and the two arms are compared paired by task
(stats.compare, one verdict). The agents are entries of `registry.AGENT_CLIS`.

What it spends is bounded before it is spent: the runs it needs (tasks x 2 arms x repeats) are
checked against `sleep.transfer.max_calls` before the first; past `max_minutes`, or once the
agent's reported cost reaches `max_cost_usd`, the remaining runs are not made. A run that fails
(a non-zero exit, a timeout, output that cannot be read) is unmeasured with its reason, never a
failure; so is a check the harness cannot grade (a rubric without a judge, a tool check on an
answer that reports no tool calls). The arms alternate which goes first from task to task, so a
cap or an outage that starts mid-run does not fall on one arm only. With repeats, a task's runs are
one unit (its success rate), never independent pairs.

Each run is isolated from the others (a fresh workspace), not from the agent's own user-level
setup: a skill installed for the user (e.g. ~/.claude/skills/NAME) is seen by both arms, so check
that the skill under test is not installed there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from skillos.errors import SkillosError
from skillos import registry
from skillos.evals import stats
from skillos.files import write_atomic
from skillos.registry import load
from skillos.repo import parse_skill
from skillos.repo.skill import SkillError
from skillos.training.textopt.sleep.mine import load_tasks
from skillos.training.textopt.sleep.replay import rule_passes

ARMS = ("without_skill", "with_skill")
REPORT, ROWS = "report.json", "rows.jsonl"
UNGRADED = {"rubric": "a rubric check needs a judge; the harness grades rule checks only",
            "tool": "the agent's answer reports no tool calls to check"}


class AgentFailed(Exception):
    """The agent ran but its output says it failed, or cannot be read."""


def claude_json(stdout: str) -> tuple[str, float | None]:
    """Claude Code's `-p --output-format json` result: (its answer, total_cost_usd)."""
    lines = [x for x in stdout.strip().splitlines() if x.strip().startswith("{")]
    try:
        data = json.loads(lines[-1])
    except (IndexError, ValueError):
        raise AgentFailed(f"no JSON result on stdout: {stdout.strip()[:120]!r}") from None
    if data.get("is_error") or data.get("subtype", "success") != "success":
        raise AgentFailed(f"the agent reported an error: {str(data.get('result') or data.get('subtype'))[:160]}")
    cost = data.get("total_cost_usd")
    return str(data.get("result") or ""), float(cost) if isinstance(cost, (int, float)) else None


def plain_text(stdout: str) -> tuple[str, float | None]:
    """An agent that prints its final answer (Codex's `exec`): the answer, no cost reported."""
    return stdout.strip(), None


def plan(tasks: list, repeats: int, max_calls: int) -> int:
    """The runs a transfer needs; more than `max_calls` is refused here, before any run."""
    calls = len(tasks) * len(ARMS) * repeats
    if calls > max_calls:
        raise SkillosError(f"sleep.transfer.max_calls {max_calls}: this transfer needs {calls} agent runs "
                           f"({len(tasks)} tasks x {len(ARMS)} arms x {repeats} repeats); raise the cap or pass fewer tasks")
    return calls


def grade(checks: list, answer: str) -> tuple[bool | None, str]:
    """(success, why): every rule check must pass; a check the harness cannot grade leaves the run
    unmeasured."""
    failed = []
    for check in checks:
        if check["rule"] in UNGRADED:
            return None, UNGRADED[check["rule"]]
        if not rule_passes(check, answer, []):
            failed.append(check["rule"] + (f" {check.get('value') or ''}".rstrip()))
    return not failed, "failed: " + "; ".join(failed) if failed else ""


class Runner:
    """One agent's runs under the transfer's caps."""

    def __init__(self, agent, binary: str, t):
        self.agent, self.binary, self.t = agent, binary, t
        self.parse = load(agent.parse)
        self.started, self.cost, self.calls = time.monotonic(), 0.0, 0
        self.stopped: str | None = None  # why the remaining runs are not made

    def _cap(self) -> str | None:
        minutes = (time.monotonic() - self.started) / 60
        if minutes >= self.t.max_minutes:
            return f"budget: {minutes:.1f} of {self.t.max_minutes:g} minutes spent"
        if self.t.max_cost_usd is not None and self.cost >= self.t.max_cost_usd:
            return f"budget: ${self.cost:.2f} of ${self.t.max_cost_usd:g} reported cost spent"
        return None

    def run(self, prompt: str, skill_markdown: str | None, skill_name: str) -> dict:
        """{answer, cost_usd, seconds, unmeasured_reason}: one run in a fresh workspace."""
        self.stopped = self.stopped or self._cap()
        if self.stopped:
            return {"answer": None, "cost_usd": None, "seconds": None, "unmeasured_reason": self.stopped}
        with tempfile.TemporaryDirectory(prefix="skillos-transfer-") as work:
            if skill_markdown is not None:
                target = Path(work) / self.agent.skills_dir / skill_name / "SKILL.md"
                target.parent.mkdir(parents=True)
                target.write_text(skill_markdown, encoding="utf-8")
            argv = [self.binary] + [a.replace("{prompt}", prompt) for a in self.agent.argv[1:]]
            self.calls += 1
            start = time.monotonic()
            try:
                done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=self.t.timeout_s,
                                      stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                return self._row(None, None, start, f"timed out after {self.t.timeout_s:g} s")
            except OSError as exc:
                return self._row(None, None, start, f"could not run {self.binary}: {exc}")
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
            return self._row(None, None, start, f"exit {done.returncode}: {tail[0][:200]}")
        try:
            answer, cost = self.parse(done.stdout)
        except AgentFailed as exc:
            return self._row(None, None, start, str(exc))
        self.cost += cost or 0.0
        return self._row(answer, cost, start, None)

    @staticmethod
    def _row(answer, cost, start, reason) -> dict:
        return {"answer": answer, "cost_usd": cost, "seconds": round(time.monotonic() - start, 3),
                "unmeasured_reason": reason}


def transfer(cfg, skill: str | Path, tasks_file: str | Path, out: str | Path, echo=print) -> dict:
    """Run every task of `tasks_file` with and without `skill` in `sleep.transfer.agent`; write
    OUT/rows.jsonl and OUT/report.json; return the report."""

    t = cfg.sleep.transfer
    agent = registry.AGENT_CLIS[t.agent]
    path = Path(skill).expanduser()
    path = path / "SKILL.md" if path.is_dir() else path
    try:
        markdown = path.read_text(encoding="utf-8")
        name = parse_skill(markdown, str(path)).name
    except (OSError, UnicodeDecodeError, SkillError) as exc:
        raise SkillosError(f"{path}: not a readable SKILL.md ({str(exc).splitlines()[0]})") from None
    tasks = load_tasks(tasks_file)
    calls = plan(tasks, t.repeats, t.max_calls)
    out = Path(out)
    if (out / REPORT).exists():
        raise SkillosError(f"{out}: already holds a transfer report; write into a new folder")
    binary = shutil.which(agent.argv[0])
    if binary is None:
        raise SkillosError(f"sleep.transfer.agent {agent.name}: `{agent.argv[0]}` is not installed (not on PATH); "
                           f"install the {agent.name} CLI, or choose another of {', '.join(registry.AGENT_CLIS.names())}")
    echo(f"transfer: {len(tasks)} tasks x {len(ARMS)} arms x {t.repeats} repeats = {calls} runs of "
         f"`{' '.join(agent.argv[:2])}` (caps: {t.max_calls} runs, {t.max_minutes:g} min"
         + (f", ${t.max_cost_usd:g}" if t.max_cost_usd is not None else "") + ")")
    runner, rows = Runner(agent, binary, t), []
    for repeat in range(t.repeats):
        for i, task in enumerate(tasks):
            for arm in (ARMS if (i + repeat) % 2 == 0 else ARMS[::-1]):
                run = runner.run(task.prompt, markdown if arm == "with_skill" else None, name)
                success, why = (None, run["unmeasured_reason"]) if run["answer"] is None else grade(task.checks,
                                                                                                      run["answer"])
                rows.append({"task": task.id, "repeat": repeat, "arm": arm, **run, "success": success,
                             "unmeasured_reason": why if success is None else None,
                             "why": why if success is False else None})
    report = summarize(rows, cfg.eval.alpha, cfg.eval.power, cfg.eval.bootstrap, t.repeats)
    report.update(agent=agent.name, skill=str(path), tasks=len(tasks), repeats=t.repeats,
                  budget={"runs": runner.calls, "planned": calls, "max_calls": t.max_calls,
                          "minutes": round((time.monotonic() - runner.started) / 60, 3),
                          "max_minutes": t.max_minutes, "cost_usd": round(runner.cost, 4),
                          "cost_reported": any(r["cost_usd"] is not None for r in rows),
                          "max_cost_usd": t.max_cost_usd, "stopped": runner.stopped})
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / ROWS, "".join(json.dumps(r) + "\n" for r in rows))
    write_atomic(out / REPORT, json.dumps(report, indent=1))
    return report


def summarize(rows: list[dict], alpha: float, power: float, n_boot: int, repeats: int) -> dict:
    """Per arm: success with its denominator and the unmeasured runs by reason; the paired
    comparison with_skill vs without_skill and its verdict (stats)."""
    arms = {}
    for arm in ARMS:
        mine = [r for r in rows if r["arm"] == arm]
        measured = [r for r in mine if r["success"] is not None]
        won = sum(bool(r["success"]) for r in measured)
        arms[arm] = {"success": {"value": won / len(measured) if measured else None, "n": won, "of": len(measured),
                                 **({} if measured else {"reason": "no run was measured"})},
                     "runs": len(mine), "unmeasured": len(mine) - len(measured),
                     "unmeasured_reasons": dict(Counter(r["unmeasured_reason"] for r in mine if r["success"] is None))}
    # The unit is the task: with repeats, its success rate over its measured runs (a sign test over
    # tasks); with one run, its outcome (McNemar). Repeats are never independent pairs.
    by = {arm: {} for arm in ARMS}
    for arm in ARMS:
        for task in dict.fromkeys(r["task"] for r in rows):
            runs = [r["success"] for r in rows if r["arm"] == arm and r["task"] == task and r["success"] is not None]
            by[arm][task] = (sum(runs) / len(runs) if runs else None) if repeats > 1 else (runs[0] if runs else None)
    compare = stats.compare_values if repeats > 1 else stats.compare
    comparison = compare(by["without_skill"], by["with_skill"], names=("with_skill", "without_skill"),
                         alpha=alpha, power=power, n_boot=n_boot)
    verdict = stats.verdicts({"with_skill": comparison}, alpha=alpha, family="with vs without the skill",
                             correction="none")["with_skill"]
    return {"arms": arms, "comparison": comparison.to_dict(), "verdict": verdict.to_dict()}
