"""skillos sleep transfer: a skill run inside a coding-agent CLI with and without it. The CLIs
here are fake executables on PATH that behave as `claude -p --output-format json` and `codex exec`
do (a real one is used when installed: the harness only ever runs what PATH names); they answer
with the skill's rule when the skill is installed where that agent discovers skills."""

import json
import os
import stat
import sys

import pytest

from conftest import run_cli

from skillos import config as cfgmod
from skillos.errors import SkillosError
from skillos.training.textopt.sleep.transfer import transfer

SKILL = """---
name: status-notes
description: How to write a status note.
---
Always include `TL;DR:` in the answer.
"""

FAKE = """#!{python}
import json, os, pathlib, sys, time
agent, args = pathlib.Path(sys.argv[0]).name, sys.argv[1:]
assert args[-2] == "--", args  # the prompt after `--`: never read as an option
prompt = args[-1]
skills = sorted(pathlib.Path.cwd().glob("{{}}/skills/*/SKILL.md".format(".claude" if agent == "claude" else ".codex")))
with open(os.environ["FAKE_AGENT_LOG"], "a") as log:
    log.write(json.dumps({{"agent": agent, "prompt": prompt, "skills": [str(p.relative_to(pathlib.Path.cwd())) for p in skills]}}) + "\\n")
if "rate limit me" in prompt:
    sys.stderr.write("error: rate limited\\n")
    sys.exit(1)
if "hang" in prompt:
    time.sleep(30)
answer = ("TL;DR: " if any("TL;DR" in p.read_text() for p in skills) else "") + "Here is the note."
if agent == "claude":
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": answer,
                      "total_cost_usd": 0.01}}))
else:
    print(answer)
"""


@pytest.fixture
def agents(tmp_path, monkeypatch):
    """Fake `claude` and `codex` on PATH, each run logged."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        exe = bin_dir / name
        exe.write_text(FAKE.format(python=sys.executable))
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    skill = tmp_path / "status-notes" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text(SKILL)

    def calls():
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

    return skill, calls


def tasks_file(tmp_path, prompts, checks=None):
    path = tmp_path / "tasks.jsonl"
    checks = checks or [{"rule": "contains", "value": "TL;DR:"}]
    path.write_text("".join(json.dumps({"prompt": p, "checks": checks}) + "\n" for p in prompts))
    return path


def cfg(**transfer):
    return cfgmod.from_dict({"sleep": {"transfer": transfer}})


def test_the_skill_installed_where_claude_code_finds_it_wins_every_paired_task(agents, tmp_path):
    skill, calls = agents
    tasks = tasks_file(tmp_path, [f"Write the status note for project {i}." for i in range(6)])
    report = transfer(cfg(agent="claude"), skill.parent, tasks, tmp_path / "out", echo=lambda _: None)
    assert report["arms"]["with_skill"]["success"] == {"value": 1.0, "n": 6, "of": 6}
    assert report["arms"]["without_skill"]["success"] == {"value": 0.0, "n": 0, "of": 6}
    c = report["comparison"]
    assert (c["n_paired"], c["b"], c["c"]) == (6, 6, 0) and c["p_value"] == pytest.approx(0.03125)
    assert report["verdict"]["word"] == "improvement"
    assert report["budget"]["runs"] == report["budget"]["planned"] == 12
    assert report["budget"]["cost_usd"] == pytest.approx(0.12) and report["budget"]["stopped"] is None
    made = calls()
    assert len(made) == 12 and {tuple(m["skills"]) for m in made} == {(), (".claude/skills/status-notes/SKILL.md",)}
    # the arms alternate which runs first, task by task
    assert [m["skills"] != [] for m in made[:4]] == [False, True, True, False]
    rows = [json.loads(x) for x in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and all(r["seconds"] is not None for r in rows)
    with pytest.raises(SkillosError, match="already holds a transfer report"):
        transfer(cfg(agent="claude"), skill, tasks, tmp_path / "out", echo=lambda _: None)


def test_codex_reads_its_own_skills_folder_and_reports_no_cost(agents, tmp_path):
    skill, calls = agents
    tasks = tasks_file(tmp_path, ["Write the weekly note.", "Write the daily note."])
    report = transfer(cfg(agent="codex"), skill, tasks, tmp_path / "out", echo=lambda _: None)
    assert report["arms"]["with_skill"]["success"]["n"] == 2 and report["arms"]["without_skill"]["success"]["n"] == 0
    assert report["budget"]["cost_reported"] is False
    assert {tuple(m["skills"]) for m in calls()} == {(), (".codex/skills/status-notes/SKILL.md",)}


def test_a_transfer_over_its_call_cap_or_without_the_cli_is_refused_before_any_run(agents, tmp_path):
    skill, calls = agents
    tasks = tasks_file(tmp_path, [f"Note {i}." for i in range(4)])
    with pytest.raises(SkillosError, match="needs 8 agent runs .4 tasks x 2 arms x 1 repeats"):
        transfer(cfg(agent="claude", max_calls=7), skill, tasks, tmp_path / "a", echo=lambda _: None)
    result = run_cli("sleep", "transfer", skill, "--tasks", tasks, "--out", tmp_path / "b",
                     "--set", "sleep.transfer.max_calls=7")
    assert result.returncode != 0 and "max_calls 7" in result.stderr and "Traceback" not in result.stderr
    no_cli = run_cli("sleep", "transfer", skill, "--tasks", tasks, "--out", tmp_path / "c",
                     env={"PATH": os.path.dirname(sys.executable)})
    assert no_cli.returncode != 0 and "`claude` is not installed" in no_cli.stderr
    assert "Traceback" not in no_cli.stderr
    assert calls() == [] and not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_failed_runs_and_ungradable_checks_are_unmeasured_never_failures(agents, tmp_path):
    skill, _ = agents
    prompts = ["Write note one.", "Please rate limit me.", "Write note two, then hang."]
    report = transfer(cfg(agent="claude", timeout_s=2), skill, tasks_file(tmp_path, prompts), tmp_path / "out",
                      echo=lambda _: None)
    for arm in ("with_skill", "without_skill"):
        a = report["arms"][arm]
        assert a["success"]["of"] == 1 and a["unmeasured"] == 2
        assert a["unmeasured_reasons"] == {"exit 1: error: rate limited": 1, "timed out after 2 s": 1}
    assert report["comparison"]["n_paired"] == 1 and report["comparison"]["n_dropped"] == 2
    rubric = transfer(cfg(agent="claude"), skill, tasks_file(tmp_path, ["A note."], [{"rule": "rubric",
                                                                                       "rubric": "Is it kind?"}]),
                      tmp_path / "rubric", echo=lambda _: None)
    assert rubric["arms"]["with_skill"]["success"]["value"] is None
    assert "needs a judge" in next(iter(rubric["arms"]["with_skill"]["unmeasured_reasons"]))
    assert rubric["verdict"]["word"] == "not reportable"


def test_the_cost_cap_stops_the_runs_in_both_arms_and_the_cli_prints_denominators(agents, tmp_path):
    skill, calls = agents
    tasks = tasks_file(tmp_path, [f"Write note {i}." for i in range(4)])
    report = transfer(cfg(agent="claude", max_cost_usd=0.03), skill, tasks, tmp_path / "out", echo=lambda _: None)
    assert len(calls()) == 3 and report["budget"]["runs"] == 3 and report["budget"]["stopped"].startswith("budget: $0.03")
    assert {a: report["arms"][a]["unmeasured"] for a in report["arms"]} == {"with_skill": 2, "without_skill": 3}
    result = run_cli("sleep", "transfer", skill, "--tasks", tasks, "--out", tmp_path / "cli")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "without_skill: 0% (0/4), unmeasured 0 of 4"
    assert lines[1] == "with_skill: 100% (4/4), unmeasured 0 of 4"
    assert lines[2].startswith("with vs without the skill (claude), paired n=4 (b=4, c=0): not detected")
    assert "8/8 planned runs made (cap 40)" in lines[3] and "$0.08 reported" in lines[3]


def test_repeats_of_a_task_are_one_unit_not_independent_pairs(agents, tmp_path):
    skill, calls = agents
    tasks = tasks_file(tmp_path, ["Write note one.", "Write note two."])
    report = transfer(cfg(agent="claude", repeats=3), skill, tasks, tmp_path / "out", echo=lambda _: None)
    assert len(calls()) == 12 and report["arms"]["with_skill"]["success"] == {"value": 1.0, "n": 6, "of": 6}
    c = report["comparison"]
    assert (c["n_paired"], c["b"], c["c"]) == (2, 2, 0)  # two tasks, each its rate over 3 runs: not 6 pairs
    assert "sign test" in c["note"]
