"""End-to-end nights of skillos sleep on CPU: mined tasks replayed through the real OpenAI SDK
against the local scripted server, gated with the paired gate, staged, adopted with a backup."""

import json

import pytest

from conftest import run_cli
from llm_server import ScriptedLLM
from sleep_fixtures import PLANTED_KEY, Claude, build_corrections
from skillos import config as cfgmod
from skillos.errors import SkillosError
from skillos.ledger import Ledger
from skillos.training.textopt.sleep.harvest import REPLAY_MARKER
import skillos
from skillos.training.textopt.sleep.stage import adopt, status

SKILL = """---
name: status-notes
description: "Write status notes, summaries and announcements for the team."
---

# Status notes
Write in plain sentences.
"""
TOKEN = "TL;DR:"


def follows_the_skill(messages):
    """A model that does what its skill says: it opens with the token only when told to."""
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    return f"{TOKEN} done.\nThe note." if TOKEN in system else "The note, as asked."


def ignores_the_skill(messages):
    return "The note, as asked."


@pytest.fixture
def world(tmp_path, monkeypatch, game_cache):
    build_corrections(tmp_path, TOKEN)
    (Claude("secret", cwd="/home/dev/work/notes").user(f"Draft the deploy summary using key {PLANTED_KEY}")
     .assistant("Here it is: ...").user(f"No, you forgot the summary line: start with `{TOKEN}`").write(tmp_path))
    skill = tmp_path / "skills" / "status-notes" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL)
    monkeypatch.setenv("SLEEP_TEST_KEY", "not-a-real-key")

    def make(server, **sleep):
        data = {"env": {"n_games": 1, "n_train_games": 0},
                "sleep": {"skill": str(skill.parent), "claude_dir": str(tmp_path / ".claude"),
                          "codex_dir": str(tmp_path / ".codex"), "home": str(tmp_path / "home"),
                          "model": {"backend": "openai", "model": "Qwen3-8B", "base_url": server.openai_url,
                                    "api_key_env": "SLEEP_TEST_KEY", "max_retries": 0, "timeout_s": 5,
                                    "max_tokens": 64}, "gate": {"mode": "paired"}, **sleep}}
        return cfgmod.from_dict(data)

    return make, skill, tmp_path / "home"


def test_a_night_stages_an_accepted_candidate_and_adopt_installs_it_with_a_backup(world):
    make, skill, home = world
    with ScriptedLLM(follows_the_skill) as server:
        report = skillos.sleep(make(server), echo=lambda _: None)
        calls = len(server.calls)
    assert report["status"] == "finished" and report["tasks"] == {"train": 8, "validation": 4, "test": 5}
    assert report["source"]["mined"]["tasks"] == 17 and report["harvest_sessions"] == 17
    first = report["candidates"][0]
    assert first["verdict"] == "accept" and first["edits"] == ["- Always include `TL;DR:` in the answer."]
    assert (first["mean_difference"], first["se"], first["threshold"], first["n_paired"]) == (1.0, 0.0, 0.0, 4)
    assert first["incumbent"] == "0/4 measured of 4" and first["candidate"] == "4/4 measured of 4"
    assert len(first["from_tasks"]) == 8 and len(first["sessions"]) == 8
    assert report["calibration"]["verdict"] == "reject"  # A/A: a copy does not beat itself
    assert len(report["candidates"]) == 1  # step 2: nothing left failing, nothing proposed
    assert report["test"]["comparison"]["b"] == 5 and report["test"]["candidates_corrected_for"] == 1
    # 5 sealed tasks cannot show an effect at alpha 0.05 even when all flip: the report says so
    assert report["test"]["comparison"]["p_value"] == 0.0625 and report["test"]["verdict"].startswith("not detected")
    assert report["budget"]["calls"] == calls == 4 + 4 + 8 + 4 + 8 + 5 + 5
    assert all(REPLAY_MARKER in c["body"]["messages"][0]["content"] for c in server.calls)
    sent = json.dumps(server.calls)
    assert "Draft the deploy summary using key [redacted]" in sent and PLANTED_KEY not in sent
    assert skill.read_text() == SKILL  # a night never writes the live skill
    proposal = home / "proposals" / f"{report['night']}-status-notes"
    assert str(proposal) == report["proposal"]
    assert "+- Always include `TL;DR:` in the answer." in (proposal / "diff.patch").read_text()
    staged = json.loads((proposal / "report.json").read_text())
    assert staged["candidates"][0]["reason"].startswith("mean paired difference +1.000 vs 2·SE = 0.000 over 4")
    assert {len(json.loads(x)["sessions"]) for x in (proposal / "tasks.jsonl").read_text().splitlines()} == {1}
    with Ledger() as ledger:
        assert [(e["name"], e["status"]) for e in ledger.experiments()] == [("sleep:status-notes", "measured")]
        (run,) = ledger.rows("runs")
        (cand,) = ledger.rows("candidates")
        assert run["status"] == "finished" and cand["verdict"] == "accept" and cand["run_id"] == run["id"]
        assert json.loads(cand["edits"])["night"] == report["night"]
        assert {e["arm"] for e in ledger.run(run["id"])["evals"]} >= {"incumbent-validation", "candidate-0", "best-test"}
        assert ledger.rows("gate_results")  # the launch gates ran and were recorded
    meta = adopt(proposal, home)
    assert "TL;DR:" in skill.read_text() and skill.read_text() == (proposal / "SKILL.md").read_text()
    assert open(meta["backup"]).read() == SKILL
    written = [p for p in [*home.rglob("*"), *Ledger().path.parent.rglob("*")] if p.is_file()]
    assert len(written) > 10 and not any(PLANTED_KEY.encode() in p.read_bytes() for p in written)
    with pytest.raises(SkillosError, match="already adopted"):
        adopt(proposal, home)
    assert status(home)["proposals"][0]["adopted_at"] == meta["adopted_at"]


def test_a_later_night_never_rereads_a_sealed_test_task_without_unseal(world, tmp_path):
    """The test tasks a night read are sealed in the ledger by content hash: a later night (even
    with a fresh sleep home, so nothing on disk remembers) leaves them out; --unseal reads them
    again and records the person's override once."""
    make, skill, home = world
    with ScriptedLLM(follows_the_skill) as server:
        first = skillos.sleep(make(server), echo=lambda _: None)
        assert first["test"]["read"] == 5 and first["test"]["sealed_left_out"] == 0
        with Ledger() as ledger:
            assert len(ledger.rows("seals")) == 5
            assert {r["experiment"] for r in ledger.rows("seals")} == {"sleep:status-notes"}
        again = skillos.sleep(make(server, home=str(tmp_path / "elsewhere")), echo=lambda _: None)
        assert again["accepted"] == 1 and again["test"]["read"] == 0 and again["test"]["sealed_left_out"] == 5
        assert again["test"]["verdict"].startswith("not reportable") and "--unseal" in again["test"]["verdict"]
        assert again["budget"]["calls"] == first["budget"]["calls"] - 2 * 5  # no seed-test, no best-test replay
        unsealed = skillos.sleep(make(server, home=str(tmp_path / "third")), echo=lambda _: None,
                                 unseal="re-measure after the judge fix")
        assert unsealed["test"]["read"] == 5 and unsealed["test"]["comparison"]["b"] == 5
    with Ledger() as ledger:
        assert len(ledger.rows("seals")) == 10
        overrides = ledger.rows("overrides")
        assert len(overrides) == 1 and "re-measure after the judge fix" in overrides[0]["reason"]
        assert overrides[0]["reason"].startswith("sleep night:")


def test_a_rejected_candidate_is_remembered_across_nights(world):
    make, skill, home = world
    with ScriptedLLM(ignores_the_skill) as server:
        first = skillos.sleep(make(server, steps=1), echo=lambda _: None)
        second = skillos.sleep(make(server, steps=1), echo=lambda _: None)
    (c,) = first["candidates"]
    assert c["verdict"] == "reject" and c["mean_difference"] == 0.0 and c["n_paired"] == 4
    assert first["proposal"] is None and first["test"] is None and "nothing staged" in first["verdict"]
    assert not (home / "proposals").exists() and skill.read_text() == SKILL
    assert json.loads((home / "rejected.json").read_text())[0]["verdict"] == "reject"
    assert second["candidates"] == []  # the rejected line is not proposed again


def test_a_night_that_hits_its_call_cap_stops_cleanly(world):
    make, skill, home = world
    with ScriptedLLM(follows_the_skill) as server:
        report = skillos.sleep(make(server, budget={"max_calls": 6}), echo=lambda _: None)
        assert len(server.calls) == 6
    assert report["status"] == "stopped" and report["stopped_because"].startswith("calls cap reached: 6 of 6")
    assert report["proposal"] is None and not (home / "proposals").exists()
    outcomes = [json.loads(x) for x in (home / "nights" / report["night"] / "outcomes.jsonl").read_text().splitlines()]
    assert len(outcomes) == 6 and report["budget"]["calls"] == 6
    with Ledger() as ledger:
        assert ledger.rows("runs")[0]["status"] == "stopped"


def test_a_total_outage_stages_nothing_and_scores_no_task_as_failed(world):
    make, skill, home = world
    with ScriptedLLM(follows_the_skill) as server:
        server.outage = True
        report = skillos.sleep(make(server), echo=lambda _: None)
    assert report["status"] == "outage" and report["proposal"] is None and report["model_call_errors"] == 5
    outcomes = [json.loads(x) for x in (home / "nights" / report["night"] / "outcomes.jsonl").read_text().splitlines()]
    assert outcomes and all(o["success"] is None and "model call failed" in o["reason"] for o in outcomes)
    assert not (home / "proposals").exists() and skill.read_text() == SKILL
    with Ledger() as ledger:
        (failure,) = ledger.failures()
        assert failure["kind"] == "operational" and "5 model call(s) failed" in failure["what"]
        evals = ledger.run(ledger.rows("runs")[0]["id"])["evals"]  # the outage ended the A/A copy at its 1st task
        assert [(e["arm"], e["n_attempted"], e["n_measured"], e["successes"]) for e in evals] == [
            ("incumbent-validation", 4, 0, 0), ("incumbent-copy", 1, 0, 0)]


def test_dry_run_prints_the_worst_case_and_spends_nothing(world, tmp_path):
    make, skill, home = world
    with ScriptedLLM(follows_the_skill) as server:
        cfg = make(server)
        path = tmp_path / "night.yaml"
        import yaml

        data = cfg.to_dict()
        path.write_text(yaml.safe_dump({"sleep": data["sleep"], "env": data["env"]}))
        result = run_cli("sleep", "night", path, "--dry-run", "--json")
        assert result.returncode == 0, result.stderr
        plan = json.loads(result.stdout)
        assert server.calls == []
    assert plan["tasks"] == {"train": 8, "validation": 4, "test": 5}
    assert plan["worst_case"]["calls"] == 2 * 4 + 2 * (8 + 4) + 2 * 5 and plan["caps_that_bind"] == []
    assert not home.exists()  # the plan writes nothing
    cron = run_cli("sleep", "schedule", path, "--at", "02:30")
    assert cron.returncode == 0 and cron.stdout.startswith("30 2 * * * cd ")
    assert f"-m skillos sleep night {path} --json" in cron.stdout
    bad = run_cli("sleep", "night", tmp_path / "missing.yaml")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_the_launch_gates_refuse_a_night_before_any_call(world, monkeypatch):
    from skillos import gates
    from skillos import checking
    from skillos.gates import core

    make, skill, home = world
    real, planted = core.checks, lambda ctx: checking.Result("planted", (7,), "FAIL", detail="planted by the test")
    monkeypatch.setattr(core, "checks", lambda phase: real(phase) + ([planted] if phase == "static" else []))
    with ScriptedLLM(follows_the_skill) as server:
        with pytest.raises(gates.GateRefused, match="planted"):
            skillos.sleep(make(server), echo=lambda _: None)
        assert server.calls == []
    assert not home.exists()


def _judge_policy(messages):
    text = messages[-1]["content"]
    if text.startswith("You check whether"):
        answer = text.split("Answer:\n", 1)[1]
        return '{"verdict": "VALID", "reason": "ok"}' if TOKEN in answer else '{"verdict": "INVALID", "reason": "no"}'
    return follows_the_skill(messages)


def test_replay_judges_rules_and_rubrics_under_a_hard_token_cap(tmp_path, monkeypatch):
    from skillos.config import BackendConfig
    from skillos.evals.backends.chat import make_chat
    from skillos.training.textopt.sleep.mine import load_tasks
    from skillos.training.textopt.sleep.replay import Budget, BudgetExhausted, Caller, Replayer

    monkeypatch.setenv("SLEEP_TEST_KEY", "not-a-real-key")
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(json.dumps({"prompt": "Draft the note", "checks": [{"rule": "rubric", "rubric": "opens with "
                                      "a summary line"}, {"rule": "regex", "value": "^TL;DR"}]}) + "\n")
    (task,) = load_tasks(tasks_file)
    with ScriptedLLM(_judge_policy) as server:
        config = BackendConfig(backend="openai", model="Qwen3-8B", base_url=server.openai_url,
                               api_key_env="SLEEP_TEST_KEY", max_retries=0, max_tokens=32)
        chat = make_chat(config)
        caller = Caller(Budget(10, 10_000, 5.0), 3)
        replayer = Replayer(caller, chat, 32, judge=chat)
        assert replayer.run(task, SKILL, "status-notes").success is False  # the judge says INVALID
        assert replayer.run(task, SKILL + "\nAlways open with TL;DR:\n", "status-notes").success is True
        assert caller.budget.calls == 4 and caller.budget.tokens == 4 * 18  # usage the server reported
        no_judge = Replayer(caller, chat, 32).run(task, SKILL, "status-notes")
        assert no_judge.success is None and "rubric unjudged" in no_judge.reason
        before = len(server.calls)
        tight = Replayer(Caller(Budget(10, 40, 5.0), 3), chat, 32)
        with pytest.raises(BudgetExhausted, match="tokens cap"):
            tight.run(task, SKILL, "status-notes")  # its worst case passes the cap: never sent
        assert len(server.calls) == before


def test_a_bad_task_file_is_one_line_error(tmp_path, world):
    make, skill, home = world
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"prompt": "x", "checks": [{"rule": "contain", "value": "y"}]}\n')
    result = run_cli("sleep", "mine", "--tasks", bad)
    assert result.returncode == 2 and "line 1: checks[0].rule 'contain' is not one of" in result.stderr
    assert result.stderr.count("\n") == 1


def _optimizer_policy(messages):
    text = messages[-1]["content"]
    if text.startswith("You improve an agent skill"):
        if "whole new SKILL.md" in text:  # sleep.edit_anywhere: rewrite the line that needs it
            return "```markdown\n" + SKILL.replace("Write in plain sentences.",
                                                   f"Open with {TOKEN} then write in plain sentences.") + "```"
        return f"- Open every note with {TOKEN}\n- Keep it short\n- Cite the ticket\nsome chatter"
    return follows_the_skill(messages)


def test_a_model_optimizer_proposes_block_lines_or_with_edit_anywhere_a_rewrite(world):
    from skillos.training.textopt.optimize import RejectedMemory
    from skillos.training.textopt.sleep.night import LLMProposer
    from skillos.training.textopt.sleep.replay import Budget, Caller

    make, skill, home = world
    with ScriptedLLM(_optimizer_policy) as server:
        optimizer = {"backend": "openai", "model": "Qwen3-8B", "base_url": server.openai_url,
                     "api_key_env": "SLEEP_TEST_KEY", "max_retries": 0, "max_tokens": 400}
        cfg = make(server, optimizer=optimizer, steps=1)
        text, lines = LLMProposer(cfg.sleep.optimizer).propose(SKILL, [], RejectedMemory(None), 2,
                                                               Caller(Budget(5, 10_000, 1.0), 2))
        assert lines == [f"- Open every note with {TOKEN}", "- Keep it short"]  # cut to the budget
        assert text.startswith(SKILL.rstrip()) and "skillos-sleep:learned" in text
        report = skillos.sleep(make(server, optimizer=optimizer, steps=1, edit_anywhere=True), echo=lambda _: None)
    (c,) = report["candidates"]
    assert c["verdict"] == "accept" and c["edits"][0].startswith("rewrite of the skill (2 diff lines, sha256 ")
    diff = (home / "proposals" / f"{report['night']}-status-notes" / "diff.patch").read_text()
    assert f"+Open with {TOKEN} then write in plain sentences." in diff and "learned" not in diff
    assert skill.read_text() == SKILL


def test_a_night_with_nothing_checkable_says_so_and_a_crash_ends_its_run(world, tmp_path, monkeypatch):
    from skillos.training.textopt.sleep import night

    make, skill, home = world
    with ScriptedLLM(follows_the_skill) as server:
        empty = make(server, claude_dir=str(tmp_path / "nothing"), codex_dir=str(tmp_path / "nothing"))
        report = skillos.sleep(empty, echo=lambda _: None)
        assert report["status"] == "no-tasks" and "no checkable task from 0 sessions" in report["verdict"]
        assert server.calls == []

        def broken(*args, **kwargs):
            raise RuntimeError("planted bug")

        monkeypatch.setattr(night.HeuristicProposer, "propose", broken)
        with pytest.raises(RuntimeError):
            skillos.sleep(make(server), echo=lambda _: None)
    with Ledger() as ledger:
        assert [(r["status"], r["detail"]) for r in ledger.rows("runs")] == [
            ("no-tasks", report["verdict"]), ("crashed", "RuntimeError: planted bug")]
    assert not (home / "proposals").exists()


def test_no_regress_rejects_what_the_strict_gate_accepts_on_a_reviewed_task_file(world, tmp_path):
    from skillos.training.textopt.sleep.mine import split_of, task_id

    make, skill, home = world
    prompts = {"train": [], "validation": []}
    for i in range(200):
        p = f"Write status note number {i}"
        bucket = prompts.get(split_of(task_id(p), 0.34, 0.2))
        if bucket is not None and len(bucket) < 4:
            bucket.append(p)
    wants = [{"rule": "contains", "value": TOKEN}]
    rows = [{"prompt": p, "checks": wants, "sessions": ["reviewed-1"]} for p in prompts["train"] + prompts["validation"][:3]]
    rows.append({"prompt": prompts["validation"][3], "checks": [{"rule": "not_contains", "value": TOKEN}]})
    tasks = tmp_path / "reviewed.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with ScriptedLLM(follows_the_skill) as server:
        report = skillos.sleep(make(server, steps=1, gate={"mode": "strict"}, no_regress=True), tasks_file=tasks,
                           echo=lambda _: None)
    (c,) = report["candidates"]
    assert report["source"]["source"].startswith("reviewed task file") and report["tasks"]["validation"] == 4
    assert c["mean_difference"] == 0.5 and c["verdict"] == "reject" and len(c["broke"]) == 1
    assert c["reason"].endswith("no_regress: it broke 1 task(s)") and report["proposal"] is None


def test_adopt_is_a_persons_step_at_a_terminal(tmp_path):
    """`sleep adopt` writes the live skill: like `approve` and `ledger goal`, it refuses without an
    interactive terminal (an agent's shell), and writes nothing."""
    from conftest import run_cli

    result = run_cli("sleep", "adopt", tmp_path / "proposal", env={"SKILLOS_HOME": str(tmp_path / "home")})
    assert result.returncode == 1 and "adopt a sleep proposal" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.bak*"))
