"""Approval before compute: `skillos plan` writes the plan, `skillos approve` is a person's step
at a terminal (typed in a real pseudo-terminal here, refused in a pipe), a GPU launch is refused
without an approved plan for its config hash; the project goal is set the same way."""

import getpass
import json
import os
import pty
import re
import select
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli
from skillos import config, gates
from skillos.ledger import Ledger

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"
MULTI = ROOT / "training" / "configs" / "skillos-paper-alfworld-2x8.yaml"
SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"


def at_terminal(home, *args, typed: str, env: dict | None = None) -> tuple[int, str]:
    """`skillos ARGS` in a real pseudo-terminal (pty.fork: stdin and stdout are the terminal),
    answering its confirmation prompt with `typed` ("CODE": the code the prompt asks for; None:
    the step is expected to refuse before it asks)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI, on the terminal
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "skillos", *map(str, args)],
                  {**os.environ, "SKILLOS_HOME": str(home), "COLUMNS": "400", **(env or {})})
    if typed is None:
        shown = _read_until(fd, None)
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        return os.waitstatus_to_exitcode(status), shown.decode(errors="replace").replace("\r\n", "\n")
    shown = _read_until(fd, b"to confirm")
    asked = re.search(rb"Type (\S+) to confirm", shown)
    assert asked, shown.decode(errors="replace")
    os.write(fd, (asked.group(1).decode() if typed == "CODE" else typed).encode() + b"\n")
    shown += _read_until(fd, None)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), shown.decode(errors="replace").replace("\r\n", "\n")


def _read_until(fd: int, marker: bytes | None, timeout: float = 60) -> bytes:
    """What the terminal prints until `marker` appears (None: until the program exits)."""
    out, deadline = b"", time.monotonic() + timeout
    while marker is None or marker not in out:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError(f"no {marker!r} within {timeout} s: {out[-500:]!r}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the program exited and closed the terminal
            break
        if not chunk:
            break
        out += chunk
    return out


def approved_plan(report):
    return next(r for r in report.results if r.check == "approved-plan")


def test_the_plan_carries_what_the_gates_and_the_step_plan_compute(tmp_path):
    from skillos.training.common.plan import step_plan

    result = run_cli("plan", PAPER, "--out", tmp_path / "plan.json", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan == json.loads(result.stdout)["plan"]
    cfg = config.load(PAPER)
    mde = next(r.values for r in gates.check(cfg).results if r.check == "mde")
    assert plan["config_hash"] == cfg.hash() and plan["mde"] == mde["mde"] and plan["spends_gpus"] is True
    assert plan["arms"] == cfg.eval.arms and plan["seeds"] == {"env.seed": cfg.env.seed, "training.seed": cfg.training.seed}
    hours = step_plan(cfg).step_seconds * cfg.training.max_steps / 3600
    assert plan["cost"]["wall_hours"] == pytest.approx(hours) and plan["cost"]["gpu_hours"] == pytest.approx(hours * 8)
    eval_plan = json.loads(run_cli("plan", ROOT / "evals/configs/quickstart.yaml", "--json").stdout)
    assert eval_plan["plan"]["cost"]["gpu_hours"] is None and "an eval" in eval_plan["plan"]["cost"]["reason"]
    assert eval_plan["plan"]["games"]["needed_for_expected_effect"] == 59  # n_for_effect(0.2, ...)


def test_approve_and_goal_are_refused_without_a_terminal(tmp_path, skillos_home):
    run_cli("plan", PAPER, "--out", tmp_path / "plan.json")
    for args in (("approve", tmp_path / "plan.json"), ("ledger", "goal", "maximize the number")):
        refused = run_cli(*args)
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
        assert "interactive terminal" in refused.stderr and "--" not in refused.stderr  # no way around named
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert ledger.rows("approvals") == [] and ledger.goals() == []


@pytest.mark.parametrize("typed", ["CODE", "yes"])
def test_a_gpu_launch_needs_a_plan_a_person_approved_at_a_terminal(tmp_path, skillos_home, typed):
    cfg = config.load(PAPER)
    assert approved_plan(gates.check(cfg)).status == "WARN"  # gate check: the plan comes first
    assert approved_plan(gates.check(cfg, command="train")).status == "FAIL"  # a launch is refused
    assert approved_plan(gates.check(config.load(SMOKE), command="train")).status == "SKIP"  # the local CPU
    run_cli("plan", PAPER, "--out", tmp_path / "plan.json")
    code, shown = at_terminal(skillos_home, "approve", tmp_path / "plan.json", typed=typed)
    assert "config hash " + cfg.hash() in shown and "cost: 56.0 GPU-h" in shown
    assert "an estimate from the config's stated step time (420 s a step" in shown and "not a measured run" in shown
    with Ledger(skillos_home / "ledger.db") as ledger:
        rows = ledger.rows("approvals")
    if typed != "CODE":  # a wrong confirmation records nothing
        assert code == 1 and rows == [] and "not confirmed" in shown
        return
    assert code == 0 and len(rows) == 1, shown
    assert rows[0]["actor"] == getpass.getuser() and rows[0]["config_hash"] == cfg.plan_hash() and rows[0]["created_at"]
    witness = json.loads(rows[0]["witness_json"])
    assert witness["terminal"]["stdin"].startswith("/dev/") and witness["ancestry"][0]["pid"]
    assert witness["agent_variables"] == [] and witness["user"] == getpass.getuser()
    assert str(tmp_path / "plan.json") not in shown.split("Type ")[1][:20]  # the code is drawn, not the file's
    passed = approved_plan(gates.check(cfg, command="train"))
    assert passed.status == "PASS" and getpass.getuser() in passed.detail
    changed = config.with_sets(cfg, ["training.learning_rate=2e-6"])  # another config: another plan
    assert approved_plan(gates.check(changed, command="train")).status == "FAIL"


def test_an_override_of_the_approval_is_recorded(skillos_home, canaries_passed):
    cfg = config.load(PAPER)
    with Ledger(skillos_home / "ledger.db") as ledger:
        with pytest.raises(gates.GateRefused, match="approved-plan"):
            gates.enforce(cfg, "sleep night", ledger, echo=lambda _: None)  # static-only: no game played
        report = gates.enforce(cfg, "sleep night", ledger, {"approved-plan": "a person said go"}, echo=lambda _: None)
        assert approved_plan(report).overridden == "a person said go"
        assert [o["check_name"] for o in ledger.rows("overrides")] == ["approved-plan"]


def test_a_plan_whose_config_changed_is_not_approved(tmp_path):
    config_file = tmp_path / "c.yaml"
    config_file.write_text(SMOKE.read_text())
    run_cli("plan", config_file, "--out", tmp_path / "plan.json")
    config_file.write_text(SMOKE.read_text().replace("seed: 0", "seed: 1", 1))
    refused = run_cli("approve", tmp_path / "plan.json")
    assert refused.returncode == 2 and "changed since the plan was written" in refused.stderr
    (tmp_path / "bad.json").write_text("[1]")
    bad = run_cli("approve", tmp_path / "bad.json")
    assert bad.returncode == 2 and "not a plan" in bad.stderr and "Traceback" not in bad.stderr


def test_approve_shows_the_configs_numbers_and_refuses_an_edited_plan(tmp_path, skillos_home):
    from skillos.gates.approval import short_hash

    run_cli("plan", PAPER, "--out", tmp_path / "plan.json")
    written = json.loads((tmp_path / "plan.json").read_text())
    for key, value in (("total", 12), ("held_out_per_arm", 5)):
        forged = {**written, "games": {**written["games"], key: value}}
        (tmp_path / "forged.json").write_text(json.dumps(forged))
        refused = run_cli("approve", tmp_path / "forged.json")
        assert refused.returncode == 2 and f"games.{key}: the file says {value}" in refused.stderr, refused.stderr
        assert "edited" in refused.stderr and refused.stderr.count("\n") == 1
    forged = {**written, "cost": {**written["cost"], "gpu_hours": 0.5}}
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    assert "cost.gpu_hours: the file says 0.5" in run_cli("approve", tmp_path / "forged.json").stderr
    # what the person types is drawn when they approve: the plan file's own hash is not it
    code, shown = at_terminal(skillos_home, "approve", tmp_path / "plan.json", typed=short_hash(
        (tmp_path / "plan.json").read_text()))
    assert code == 1 and "not confirmed" in shown
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert ledger.rows("approvals") == []


def test_a_plan_covers_the_resources_it_reserves(tmp_path, skillos_home):
    ray2, ray16 = (config.with_sets(config.load(PAPER), ["compute.backend=ray", f"compute.ray_gpus_per_task={n}"])
                   for n in (2, 16))
    assert ray2.hash() == ray16.hash()  # one experiment: the same rows
    assert ray2.plan_hash() != ray16.plan_hash()  # two plans: different GPUs reserved
    with Ledger(skillos_home / "ledger.db") as ledger:
        ledger.add_approval(ray2.plan_hash(), "0" * 64, {}, "alice")
    assert approved_plan(gates.check(ray2, command="eval")).status == "PASS"
    assert approved_plan(gates.check(ray16, command="eval")).status == "FAIL"
    for gpu in ("H100:-3", "H100:0", "H100:two", ":4"):
        refused = run_cli("plan", PAPER, "--set", f"compute.gpu={gpu}", "--out", tmp_path / "p.json")
        assert refused.returncode == 2 and "compute.gpu" in refused.stderr and "1 or more" in refused.stderr
        assert not (tmp_path / "p.json").exists()
    refused = run_cli("plan", PAPER, "--set", "compute.ray_gpus_per_task=-1")
    assert refused.returncode == 2 and "compute.ray_gpus_per_task" in refused.stderr
    assert "at most 64" in run_cli("plan", PAPER, "--set", "compute.gpu=H100:9999").stderr
    # fewer GPUs than processes: the plan would cost 2 where the launch takes 8
    few = next(r for r in gates.check(config.with_sets(config.load(PAPER), ["compute.gpu=H100:2"])).results
               if r.check == "gpu-count")
    assert few.status == "FAIL" and "4 training processes + 4 server GPU(s) per machine on 2 GPU(s)" in few.detail
    # a Modal launch that names no GPU asks for one per process: the plan costs the same
    modal = json.loads(run_cli("plan", MULTI, "--set", "compute.backend=modal", "--set", "compute.gpu=null",
                               "--set", "compute.num_machines=1", "--set", "compute.num_processes=8",
                               "--out", tmp_path / "m.json", "--json").stdout)["plan"]
    assert modal["cost"]["gpus"] == 8 and modal["cost"]["wall_hours"] == 4.5 and modal["cost"]["gpu_hours"] == 36.0
    # where and how a Ray plan runs is part of what was approved
    ray = config.with_sets(config.load(PAPER), ["compute.backend=ray"])
    for more in ("compute.ray_address=ray://10.9.9.9:10001", "compute.ray_max_retries=100", "compute.watchdog=false"):
        assert config.with_sets(ray, [more]).plan_hash() != ray.plan_hash(), more


@pytest.mark.parametrize("variable", ["CLAUDECODE", "CODEX_SANDBOX", "GEMINI_CLI"])
def test_a_persons_step_is_refused_in_an_agents_shell_even_at_a_terminal(tmp_path, skillos_home, variable):
    run_cli("plan", PAPER, "--out", tmp_path / "plan.json")
    code, shown = at_terminal(skillos_home, "approve", tmp_path / "plan.json", typed=None, env={variable: "1"})
    assert code == 1 and "coding agent" in shown and variable in shown and "to confirm" not in shown
    code, shown = at_terminal(skillos_home, "ledger", "goal", "win", typed=None, env={variable: "1"})
    assert code == 1 and "coding agent" in shown
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert ledger.rows("approvals") == [] and ledger.goals() == []


def test_what_approve_shows_cannot_drive_the_terminal(tmp_path, skillos_home):
    """A plan file's proposer (not recomputable) or a hypothesis carrying escape sequences that
    would clear the screen and draw another plan is shown escaped."""
    import yaml

    data = yaml.safe_load(PAPER.read_text())
    data["experiment"]["hypothesis"] = "fine\x1b[2J\x1b[Hcost: 2.0 GPU-h"
    config_file = tmp_path / "c.yaml"
    config_file.write_text(yaml.safe_dump(data))
    (tmp_path / "zero3-offload.json").write_text((PAPER.parent / "zero3-offload.json").read_text())
    written = run_cli("plan", config_file, "--out", tmp_path / "plan.json")
    assert written.returncode == 0 and "\x1b" not in written.stdout and "fine\\x1b[2J" in written.stdout
    plan = json.loads((tmp_path / "plan.json").read_text())
    (tmp_path / "plan.json").write_text(json.dumps({**plan, "proposed_by": "root\x1b[2J"}))
    code, shown = at_terminal(skillos_home, "approve", tmp_path / "plan.json", typed="no")
    assert "\x1b[2J" not in shown and "fine\\x1b[2J" in shown and "root\\x1b[2J" in shown, shown[-800:]


def test_a_forged_login_is_visible_in_the_ledger_and_the_postmortem(tmp_path, skillos_home):
    run_cli("plan", PAPER, "--out", tmp_path / "plan.json")
    code, shown = at_terminal(skillos_home, "approve", tmp_path / "plan.json", typed="CODE",
                              env={"LOGNAME": "the-boss", "USER": "the-boss"})
    assert code == 0, shown
    listed = json.loads(run_cli("ledger", "approvals", "--json").stdout)
    assert listed[0]["actor"] == getpass.getuser()  # the real user, not $LOGNAME
    assert any("$LOGNAME 'the-boss'" in s for s in listed[0]["suspect"])
    # the pseudo-terminal this test opens is held by python (pty.fork), not by a terminal: shown
    assert any("its terminal is held by python" in s for s in listed[0]["suspect"]), listed[0]["suspect"]
    report = run_cli("postmortem").stdout
    assert "approval #1 of plan hash" in report and "SUSPECT: " in report and "$LOGNAME 'the-boss'" in report


def test_the_goal_is_set_at_a_terminal_and_every_goal_is_listed(skillos_home):
    assert at_terminal(skillos_home, "ledger", "goal", "reproduce SkillOS", typed="CODE")[0] == 0
    code, shown = at_terminal(skillos_home, "ledger", "goal", "beat SkillOS", typed="no")
    assert code == 1 and "current goal: reproduce SkillOS" in shown
    assert at_terminal(skillos_home, "ledger", "goal", "beat SkillOS", typed="CODE")[0] == 0
    goals = json.loads(run_cli("ledger", "goal", "--list", "--json").stdout)
    assert [(g["text"], g["set_by"]) for g in goals] == [("reproduce SkillOS", getpass.getuser()),
                                                        ("beat SkillOS", getpass.getuser())]
    assert all(g["created_at"] for g in goals)
    listed = run_cli("ledger", "goal", "--list").stdout.splitlines()
    assert len(listed) == 2 and listed[1].endswith(f"set by {getpass.getuser()}: beat SkillOS")
    assert json.loads(run_cli("ledger", "goal", "--json").stdout)["text"] == "beat SkillOS"


def test_the_plan_ends_with_what_stands_before_the_launch(tmp_path):
    """One answer to "can I launch?": `skillos plan --json` lists each blocker with who owns it,
    the exact command and its measured time, and the last canary of the trainer."""
    import json

    from conftest import ROOT, run_cli

    env = {"SKILLOS_HOME": str(tmp_path / "home"), "ALFWORLD_DATA": ""}
    out = tmp_path / "plan.json"
    result = run_cli("plan", ROOT / "training" / "configs" / "single-gpu-lora.yaml", "--out", out, "--json", env=env)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)["plan"]
    steps = {item["check"]: item for item in plan["before_launch"]}
    # the curator's canary is the agent's to run, with the time the project measured for it
    canary = steps["recipe-learns"]
    assert canary["owner"] == "agent" and canary["command"] == "skillos canary curator --json"
    from skillos.training.common.plan import duration_text

    seconds = json.loads((ROOT / "training" / "configs" / "canary-times.json").read_text())["curator"]["default"][0]
    assert canary["time"].startswith("never timed in this ledger") and duration_text(seconds) in canary["time"]
    selector = json.loads(run_cli("plan", ROOT / "training" / "configs" / "selector-gpu-clean-oracle.yaml", "--out",
                                  tmp_path / "s.json", "--json", env=env).stdout)["plan"]
    (learns,) = [item for item in selector["before_launch"] if item["check"] == "recipe-learns"]
    assert learns["owner"] == "agent" and learns["command"] == "skillos canary selector --credit clean-oracle --json"
    assert learns["time"].startswith("never timed in this ledger")
    approve = steps["approved-plan"]
    assert approve["owner"] == "person" and approve["command"].startswith(f"skillos approve {out}")
    assert plan["before_launch"][-1]["owner"] == "person"  # the agent's steps come first
    assert steps["dry-run"]["command"].endswith("--dry-run --json")
    assert plan["last_canary"] == {"trainer": "curator", "id": None, "reason": "no ledger on this machine"}
    assert json.loads(out.read_text())["before_launch"] == plan["before_launch"]
    text = run_cli("plan", ROOT / "training" / "configs" / "single-gpu-lora.yaml", "--out", out, env=env).stdout
    assert "before launch (" in text and "[person] approved-plan (WARN): skillos approve" in text
    quick = json.loads(run_cli("plan", ROOT / "evals" / "configs" / "quickstart.yaml", "--out", tmp_path / "q.json",
                               "--json", env=env).stdout)["plan"]
    assert [item["check"] for item in quick["before_launch"]] == ["dry-run"] and quick["last_canary"] is None
