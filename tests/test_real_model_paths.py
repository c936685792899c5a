"""The last model paths on a real pretrained model on CPU (issue 63, item 3): SmolLM2-135M-Instruct,
fetched by name as tests/test_real_model.py fetches it, as the slate executor (SkillGate), as the
reasoning executor, as the optimizer's reflector and the proposer that reads its gradient, as the
model Sleep's night replays its tasks with and the model behind the coding-agent CLI its transfer
runs, and as the model the selector trainer warm-starts (gold-bc, LoRA) and takes one GRPO step
on. A 135M model shows no ability here: each test asserts that every reply it wrote was read,
graded or counted, never dropped, crashed on or scored as a silent 0.
Slow: ~4-5 min on 2 cores, the selector's warm start and step ~2 min of it (the model is fetched
once per session, by conftest's `smollm2` fixture, whichever module asks first)."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow
NAME = "smollm2-135m-instruct"
SLEEP_EXAMPLE = ROOT / "training" / "configs" / "sleep-example"


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- the slate executor (SkillGate) ---------------------------------------------------------
def test_the_slate_executor_on_the_real_model_records_what_it_read_and_measures_or_counts_each_play(
        smollm2, tmp_path):
    out = tmp_path / "slate"
    result = run_cli("slate", "eval", ROOT / "evals" / "configs" / "smollm2-slate.yaml", "--out", out, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    rows = _jsonl(out / "slate_games.jsonl")
    assert [(r["arm"], r["selects"]) for r in rows] == [("executor", True)]  # the model chooses what it reads
    for r in rows:
        # measured, or unmeasured with its reason
        assert (r["success"] is None) == bool(r["unmeasured_reason"]), r
        # every read_skill call kept, with its role on the slate (None: a name not on it) and its
        # place in the model's token stream; none at all is recorded as none
        assert len(r["reads"]) == len(r["read_roles"]) == len(r["read_positions"]) <= 2 * max(r["steps"], 1)
        assert all(role in ("oracle", "relevant", "misleading", "irrelevant", None) for role in r["read_roles"])
        assert r["completion_tokens"] > 0 and 0 <= r["selection_tokens"] <= r["completion_tokens"]
        assert all(0 <= a < b <= r["completion_tokens"] for a, b in r["read_positions"])
        assert (r["selection_tokens"] > 0) == bool(r["reads"])  # a reply that read is a selection span
        # an action the model wrote that was not admissible is counted on its row, never played as its own
        assert 0 <= r["coerced_actions"] <= r["steps"]
    measured = [r for r in rows if r["success"] is not None]
    selection = report["arms"]["executor"]["selection"]
    assert (selection["episodes"], selection["measured"], selection["unmeasured"]) == \
        (1, len(measured), 1 - len(measured))
    assert selection["no_read"] == {"value": (sum(not r["reads"] for r in measured) / len(measured)
                                              if measured else None),
                                    "n": sum(not r["reads"] for r in measured), "of": len(measured),
                                    **({} if measured else {"reason": "no measured episodes"})}
    assert sum(c["n"] for c in selection["first_read"].values()) == len(measured)
    assert selection["reads_per_episode"]["n"] == sum(len(r["reads"]) for r in measured)
    assert selection["selection_token_share"]["of"] == sum(r["completion_tokens"] for r in measured)
    # the coerced actions reach the report, with their denominator
    assert (selection["coerced_actions"]["n"], selection["coerced_actions"]["of"]) == \
        (sum(r["coerced_actions"] for r in measured), sum(r["steps"] for r in measured))
    assert "coerced actions" in result.stderr
    assert "executor: success" in result.stderr and report["pins"]["prompt_hash"]


# -- the reasoning executor -----------------------------------------------------------------
def test_the_reasoning_executor_on_the_real_model_grades_each_answer_or_says_none_was_read(smollm2, tmp_path):
    import skillos
    from skillos.evals.envs.reasoning.grading import grade
    from skillos.evals.envs.registry import environment

    config = ROOT / "evals" / "configs" / "smollm2-reasoning.yaml"
    out = tmp_path / "r"
    result = run_cli("eval", config, "--out", out, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {r["game_id"]: r for r in _jsonl(out / "games.jsonl")}
    trajectories = {t["game_id"]: t for t in _jsonl(out / "trajectories.jsonl")}
    cfg = skillos.load(config)
    problems = {p.id: p for p in environment(cfg).load_tasks(cfg, cfg.env.split, cfg.env.n_games)}
    assert len(rows) == len(problems) == 2 and set(rows) == set(problems) == set(trajectories)
    for game, row in rows.items():
        if row["unmeasured"]:  # a failed model call: unmeasured with its reason, never a wrong answer
            assert row["success"] is None and row["unmeasured_reason"], row
            continue
        [step] = trajectories[game]["steps"]  # one turn: the model's whole reply is its answer
        assert step["coerced"] is False and step["proposed"] is None  # free text: nothing to coerce
        reply, feedback = step["action"], step["observation"]
        graded = grade(problems[game].grading, problems[game].answer, reply)
        # the row's outcome is the grader's on the reply the model wrote, and what it read is said
        assert row["success"] is graded.correct and row["grading_timeouts"] == int(graded.timed_out)
        assert row["unread_answers"] == int(graded.extracted is None)  # a reply with no answer: counted
        if graded.extracted is None:  # graded wrong, and the trajectory says no answer was read
            assert feedback == "No final answer could be extracted (graded wrong)." and not row["success"]
        else:
            assert feedback.startswith(f"Final answer read: {graded.extracted}.")
    arm = json.loads(result.stdout)["arms"]["no_memory"]
    measured = [r for r in rows.values() if not r["unmeasured"]]
    assert measured  # greedy and local: the model answered (a path whose every call fails must not pass)
    assert (arm["attempted"], arm["measured"], arm["unmeasured"]) == (2, len(measured), 2 - len(measured))
    assert arm["successes"] == sum(r["success"] for r in measured)
    assert arm["grading_timeouts"] == sum(r["grading_timeouts"] for r in rows.values())
    assert arm["unread_answers"] == sum(r["unread_answers"] for r in rows.values())


# -- the model reflector (and the proposer that reads its gradient) --------------------------
def test_the_model_reflector_on_the_real_model_reflects_on_a_real_trajectory_and_its_proposal_is_counted(
        smollm2, tmp_path):
    import skillos
    from skillos.config import BackendConfig
    from skillos.evals.arms import load_games
    from skillos.evals.envs.registry import environment
    from skillos.evals.runner import play
    from skillos.repo import SkillRepo
    from skillos.repo.retrieval import Retriever
    from skillos.training.textopt.candidates import RejectedMemory
    from skillos.training.textopt.optimize import LLMProposer
    from skillos.training.textopt.reflect import step_record

    # a real trajectory: the CPU executor plays a generated household game with the quickstart's skills
    cfg = skillos.load(ROOT / "evals" / "configs" / "smollm2-hf.yaml",
                       sets=["executor.backend=heuristic", "executor.model=null"])
    games = load_games(cfg, cfg.env.split, 1)
    household = environment(cfg)
    repo = SkillRepo.load(ROOT / "evals" / "configs" / "skills" / "quickstart-curated")
    traj = play(household.make_env(games), household.make_executor(cfg.executor), Retriever(repo, "bm25"),
                games[0], 4, 2)
    assert traj.won is not None and traj.retrieved and traj.steps
    repo = SkillRepo(None, [repo.get(n) for n in traj.retrieved])  # the skills it read: a prompt that fits 8k tokens

    proposer = LLMProposer(BackendConfig(backend="hf", model=NAME, temperature=0, max_tokens=64))
    reflections, gradient = proposer.reflect(repo, [traj])
    [r] = reflections
    # the model's reply is the reflection (a failed call would fall back to the rules and say so)
    assert r.source == f"hf:{NAME}" and r.text.strip() and r.won is traj.won
    # a quote is a citation only where it is the text of a skill the game read
    assert all(c["unit"] in traj.retrieved and c["line"] in repo.get(c["unit"]).body for c in r.cites)
    assert gradient.source == f"hf:{NAME}" and gradient.text.strip()
    record = step_record([traj], reflections, gradient)
    assert (record["reflections"], record["reflected_failed"] + record["reflected_won"]) == (1, 1)

    edits = proposer.propose(repo, [traj], RejectedMemory(tmp_path / "rejected.json"), 8, gradient)
    reply = proposer.reply
    # its reply becomes edits, or it is counted as failed with why: no call parsed, or every
    # operation its calls named refused
    if reply["parsed_calls"] == 0:
        assert reply["failure"].startswith(("the reply held no parseable tool call", "model call failed")) and not edits
    elif reply["applied_ops"] == 0:
        assert reply["failure"].startswith("every operation its calls named was refused")
    assert (reply["failure"] is None) == (reply["applied_ops"] > 0)
    assert not edits or reply["applied_ops"] > 0  # an edit comes only from an operation applied


# -- Sleep: a night's replay, and a transfer through an agent CLI -------------------------------
def test_a_sleep_night_replays_on_the_real_model_and_reports_every_replay_with_its_denominator(smollm2, tmp_path,
                                                                                            skillos_home):
    sessions = tmp_path / "sessions" / "projects" / "-home-dev-app"
    sessions.mkdir(parents=True)
    for n in ("00", "02", "09"):  # by their content hash: one train, one validation, one sealed test task
        src = SLEEP_EXAMPLE / "sessions" / "projects" / "-home-dev-app" / f"example-{n}.jsonl"
        (sessions / src.name).write_bytes(src.read_bytes())
    sets = ["sleep.model.backend=hf", f"sleep.model.model={NAME}", "sleep.model.temperature=0",
            "sleep.model.max_tokens=48", "sleep.steps=1", f"sleep.claude_dir={tmp_path / 'sessions'}"]
    result = run_cli("sleep", "night", SLEEP_EXAMPLE / "night.yaml", "--json", *(a for s in sets for a in ("--set", s)))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["status"] == "finished" and report["tasks"] == {"train": 1, "validation": 1, "test": 1}
    assert report["harvest_sessions"] == 3 and report["source"]["mined"] == {"candidates": 3, "tasks": 3, "dropped": {}}
    night = skillos_home / "sleep" / "nights" / report["night"]
    outcomes = _jsonl(night / "outcomes.jsonl")
    # every replay is one model call and one outcome: passed, failed with the checks it failed, or
    # unmeasured because the call failed
    assert len(outcomes) == report["budget"]["calls"] >= 3
    for o in outcomes:
        assert (o["success"], o["reason"][:8]) in ((True, ""), (False, "failed: "), (None, "model ca")), o
    assert report["model_call_errors"] == sum(o["success"] is None for o in outcomes)
    assert any(o["success"] is not None for o in outcomes)  # the model answered: replays were graded
    # greedy replies: the skill against a copy of itself is never an improvement
    aa = report["calibration"]
    assert aa["verdict"] == "reject" and aa["n_tasks"] == 1 and aa["n_paired"] + aa["n_unmeasured"] == 1
    train = [o for o in outcomes if o["arm"] == "train-0"]
    assert len(train) == 1 and len(report["candidates"]) == (train[0]["success"] is False)
    checks = next(t["checks"] for t in _jsonl(night / "tasks.jsonl") if t["id"] == train[0]["task"])
    failed = [c["value"] for c in checks if c.get("value") and c["value"] in train[0]["reason"]]
    for c in report["candidates"]:  # its lines say what the checks the real reply failed asked for
        assert c["from_tasks"] == [train[0]["task"]] and c["edits"]
        assert all(any(value in line for value in failed) for line in c["edits"]), (c["edits"], failed)
        assert all(re.fullmatch(r"[01]/[01] measured of 1", c[k]) for k in ("incumbent", "candidate"))
    assert (report["test"] is None) == (report["accepted"] == 0)  # the sealed test is read only for an accepted one


CODEX = """#!{python}
# `codex exec ... -- PROMPT` answered by SmolLM2-135M-Instruct in process: the skills installed in
# the workspace, where Codex discovers them, go in its system prompt
import json, os, pathlib, sys
from skillos.config import BackendConfig
from skillos.evals.backends.hf_chat import HFChat
assert sys.argv[1] == "exec" and sys.argv[-2] == "--", sys.argv
skills = sorted(pathlib.Path.cwd().glob(".codex/skills/*/SKILL.md"))
with open(os.environ["AGENT_LOG"], "a") as log:
    log.write(json.dumps({{"prompt": sys.argv[-1], "skills": [p.parent.name for p in skills]}}) + "\\n")
system = [{{"role": "system", "content": "\\n\\n".join(p.read_text() for p in skills)}}] if skills else []
chat = HFChat(BackendConfig(backend="hf", model="{model}", temperature=0, max_tokens=48))
print(chat.chat(system + [{{"role": "user", "content": sys.argv[-1]}}]).text)
"""


def test_a_sleep_transfer_grades_a_real_models_answers_with_and_without_the_skill(smollm2, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text(CODEX.format(python=sys.executable, model=NAME))
    codex.chmod(codex.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("AGENT_LOG", str(tmp_path / "agent.jsonl"))
    skill = tmp_path / "release-notes" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text((SLEEP_EXAMPLE / "release-notes" / "SKILL.md").read_text()
                     + "\n- Always include `TL;DR:` in the answer.\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"prompt": "Draft the release notes for the 2.0 beta",
                                 "checks": [{"rule": "contains", "value": "TL;DR:"},
                                            {"rule": "length", "unit": "words", "max": 400}]}) + "\n")
    out = tmp_path / "transfer"
    result = run_cli("sleep", "transfer", skill, "--tasks", tasks, "--out", out, "--json",
                     "--set", "sleep.transfer.agent=codex")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    rows = _jsonl(out / "rows.jsonl")
    runs = _jsonl(tmp_path / "agent.jsonl")
    # one run an arm, the skill installed where Codex discovers it in the with_skill run only
    assert sorted(r["arm"] for r in rows) == ["with_skill", "without_skill"] and len(runs) == 2
    assert sorted(tuple(r["skills"]) for r in runs) == [(), ("release-notes",)]
    for row in rows:
        if row["success"] is None:  # an agent run that failed: unmeasured with its reason
            assert row["unmeasured_reason"] and row["answer"] is None
            continue
        # graded by the task's checks on the model's own answer
        answer = row["answer"]
        assert row["success"] == ("tl;dr:" in answer.lower() and len(answer.split()) <= 400)
        assert (row["why"] is None) == row["success"]
    for arm, a in report["arms"].items():
        measured = [r for r in rows if r["arm"] == arm and r["success"] is not None]
        assert (a["runs"], a["unmeasured"], a["success"]["of"]) == (1, 1 - len(measured), len(measured))
        assert a["success"]["n"] == sum(r["success"] for r in measured)
    assert report["budget"]["runs"] == report["budget"]["planned"] == 2 and report["budget"]["stopped"] is None
    assert any(r["success"] is not None for r in rows)  # the stand-in agent answered: graded, not all unmeasured
    assert report["comparison"]["n_paired"] + report["comparison"]["n_dropped"] == 1


# -- the selector trainer: its warm start (gold-bc, LoRA) and one GRPO step on the real model ----
def test_the_selector_trainer_warm_starts_the_real_model_with_lora_then_takes_a_grpo_step_and_says_what_moved(
        smollm2, tmp_path):
    from safetensors import safe_open
    from transformers import AutoTokenizer
    from trl.chat_template_utils import supports_tool_calling

    from skillos.evals.backends.chat import parse_generated
    from skillos.evals.backends.tiny_model import resolve

    out = tmp_path / "ckpt"
    result = run_cli("train", ROOT / "training" / "configs" / "selector-cpu-smollm2.yaml", "--json",
                     "--set", f"training.output_dir={out}", "--set", "skillgate.sft_steps=1")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    # the warm start: gold-bc SFT with LoRA, one step, merged into the start GRPO trains on
    init = summary["init"]
    assert (init["init"], init["rows"], len(init["losses"])) == ("gold-bc", 2, 1)
    assert math.isfinite(init["losses"][0]) and init["losses"][0] > 0
    # what it learned from is the call the trainer parses: each row's completion is a read_skill
    # call of its slate's oracle in skillos's tool format (SmolLM2's own template drops tool calls)
    for row in _jsonl(out / "sft_start.jsonl"):
        assert '"name": "read_skill"' in row["prompt"] and "<tools>" in row["prompt"]  # the tools it is shown
        calls = parse_generated(row["completion"]).tool_calls
        assert calls == [{"name": "read_skill", "arguments": {"name": row["read"]}}], row["completion"]
    base = resolve(NAME)
    with safe_open(f"{base}/model.safetensors", "pt") as b, safe_open(f"{init['model']}/model.safetensors", "pt") as s:
        q, e = "model.layers.0.self_attn.q_proj.weight", "model.embed_tokens.weight"
        assert (s.get_tensor(q) - b.get_tensor(q)).abs().max() > 0  # LoRA moved the adapted weights, merged
        assert (s.get_tensor(e) == b.get_tensor(e)).all()  # and nothing it does not adapt
    # one GRPO step: its checkpoint is a LoRA adapter on the start, its tokenizer's template renders
    # the whole tool-calling exchange TRL requires (SmolLM2's own does not: TRL refused to build the
    # trainer on it before its first step)
    [checkpoint] = map(Path, summary["checkpoints"])
    adapter = json.loads((checkpoint / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == init["model"] and adapter["r"] == 8
    assert supports_tool_calling(AutoTokenizer.from_pretrained(checkpoint))
    assert not supports_tool_calling(AutoTokenizer.from_pretrained(base))  # the control
    # its rollouts' reads (or none) are logged with their credit, and the step says whether the
    # weights moved as its advantages say they must: no advantage, no gradient
    rollouts = _jsonl(out / "selection.jsonl")
    assert len(rollouts) == 2 and summary["steps"][0]["episodes"] == 2
    for r in rollouts:
        assert r["completion_tokens"] > 0 and len(r["read_spans"]) >= len(r["reads"])
        assert r["utility"] == (1.0 if [x for x in r["read_roles"] if x] == ["oracle"] else 0.0)
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    [step] = [h for h in state["log_history"] if "grad_norm" in h]
    moved = any(r["outcome_advantage"] or r["selector_advantage"] for r in rollouts)
    assert (step["grad_norm"] > 0) == moved and summary["signal"]["grad_nonzero"] == int(moved)
    assert f"grad_norm > 0 in {int(moved)} of 1" in result.stderr
