"""skillos train: GRPOConfig from the config, the launch plans, complete-checkpoint detection,
and (slow, run in CI) a real CPU run of 2 GRPO steps whose checkpoint loads as a curator."""

import json
import os
import sqlite3
from pathlib import Path

import pytest

from skillos import config as cfgmod
from conftest import ROOT, run_cli

from skillos.gates.reference import load

PAPER = ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"
SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"
MULTI = ROOT / "training" / "configs" / "skillos-paper-alfworld-2x8.yaml"


def test_grpo_config_from_the_paper_config_matches_table_4():
    from skillos.training.common.grpo import build_args

    cfg = cfgmod.load(PAPER)
    args = build_args(cfg, cpu=True)
    assert args.max_prompt_length == 16384  # skillos's field: TRL 1.16's GRPOConfig has none
    table = load("skillos-paper/alfworld").values
    for key in ("learning_rate", "num_generations", "beta", "temperature", "max_steps"):
        assert getattr(args, key) == table[f"training.{key}"], key
    completions = args.per_device_train_batch_size * args.gradient_accumulation_steps * cfg.compute.num_processes
    # Table 4's batch is read as prompts (32 x 8 completions); this config declares its 4 prompts x 8
    assert completions // args.num_generations == cfg.divergences["prompts_per_step"]["value"] == 4
    assert load("skillos-paper/alfworld").batch == {**load("skillos-paper/alfworld").batch, "size": 32,
                                                      "means": "prompts"}
    assert args.max_completion_length == cfg.training.group_size * 4096  # the whole multi-turn rollout
    assert args.max_tool_calling_iterations == cfg.training.group_size - 1
    assert args.loss_type == "grpo" and getattr(args.lr_scheduler_type, "value", None) == "constant"
    assert args.use_vllm and args.vllm_mode == "server" and args.save_steps == 5
    assert args.save_total_limit is None  # every checkpoint kept for the sweep
    assert args.generation_kwargs == {"max_tokens": 4096}  # one response (vLLM's name), not the rollout


def test_one_turn_is_capped_at_max_turn_tokens_while_the_rollout_keeps_max_completion_length(tmp_path):
    """training.max_turn_tokens reaches TRL's generation config as max_new_tokens (the
    transformers path: every generation call of a turn), beside the whole rollout's
    max_completion_length; a cap above the rollout's is refused at load."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from skillos.evals.backends.tiny_model import build
    from skillos.training.common.grpo import build_args

    cfg = cfgmod.with_sets(cfgmod.load(ROOT / "training" / "configs" / "cpu-smoke.yaml"),
                           ["training.max_turn_tokens=7", f"training.output_dir={tmp_path}"])
    args = build_args(cfg, cpu=True)
    assert args.generation_kwargs == {"max_new_tokens": 7} and args.max_completion_length == 512
    trainer = GRPOTrainer(model=str(build()), reward_funcs=[lambda completions, **_: [0.0] * len(completions)],
                          args=args, train_dataset=Dataset.from_list([{"prompt": "hi"}] * 4))
    assert trainer.generation_config.max_new_tokens == 7 and trainer.max_completion_length == 512
    with pytest.raises(cfgmod.ConfigError, match="max_turn_tokens .600. is above training.max_completion_length"):
        cfgmod.with_sets(cfg, ["training.max_turn_tokens=600"])


def test_the_modal_and_accelerate_launches_are_printed_not_made(tmp_path, canaries_passed):
    result = run_cli("train", MULTI, "--backend", "modal", "--dry-run", "--set", "compute.num_machines=1",
                     "--set", "compute.num_processes=8", "--set", "training.gradient_accumulation_steps=4")
    assert result.returncode == 0, result.stderr
    assert "launch: modal" in result.stdout and "gpu: H100:8" in result.stdout
    assert "volume: {'/checkpoints': 'skillos-checkpoints'}" in result.stdout
    assert "accelerate launch --num_processes 8 --use_deepspeed" in result.stdout
    # the paper's layout serves its models from GPUs a Modal container never starts a server on
    refused = run_cli("train", PAPER, "--backend", "modal", "--dry-run")
    assert refused.returncode == 1 and "a modal launch starts only the training processes" in refused.stdout + refused.stderr
    plan = json.loads(run_cli("train", PAPER, "--backend", "accelerate", "--dry-run", "--json").stdout)["plan"]
    assert plan["command"][:4] == ["accelerate", "launch", "--num_processes", "4"]
    assert plan["command"][-3:] == ["-m", "skillos.training.common.launch", str(PAPER)]
    assert Path(plan["command"][plan["command"].index("--deepspeed_config_file") + 1]).is_file()


def test_a_modal_launch_builds_the_app_and_without_a_token_says_so(tmp_path, game_cache, canaries_passed):
    """The real modal SDK builds the app (image, volume, GPU) and stops at authentication: a
    one-line error that says what to do, after the gates ran; never a launch from a test."""
    import yaml

    data = yaml.safe_load(SMOKE.read_text())
    data["compute"]["backend"] = "modal"
    config = tmp_path / "smoke-modal.yaml"
    config.write_text(yaml.safe_dump(data))
    from skillos import config as cfgmod
    from skillos.ledger import Ledger

    with Ledger(canaries_passed / "ledger.db") as ledger:  # as `skillos approve` records a person's approval
        ledger.add_approval(cfgmod.load(config).plan_hash(), "0" * 64, {"plan": 1}, "person")
    no_token = {"MODAL_TOKEN_ID": "", "MODAL_TOKEN_SECRET": "", "MODAL_CONFIG_PATH": str(tmp_path / "none.toml")}
    result = run_cli("train", config, cwd=tmp_path, env=no_token)
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: modal: Token missing") and last.endswith("(modal token new)")
    assert "Traceback" not in result.stderr and "gates (train):" in result.stderr  # the gates ran first
    assert not (tmp_path / "checkpoints").exists()


FAKE_ACCELERATE = """#!{python}
# `accelerate launch ...` as a launch would run it: look for the watchdog process watching this pid
import os, pathlib, sys, time
me, found, deadline = str(os.getpid()), "", time.time() + 30
while not found and time.time() < deadline:
    for proc in pathlib.Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\\0")
        except OSError:
            continue
        if "watch" in argv and "--pid" in argv and argv[argv.index("--pid") + 1] == me:
            found = " ".join(argv)
    time.sleep(0.2)
pathlib.Path(os.environ["SEEN_WATCHDOG"]).write_text(found)
"""


@pytest.mark.slow
def test_an_accelerate_launch_runs_beside_a_watchdog_process(tmp_path, game_cache, canaries_passed):
    """Gate 7 on the accelerate path: the launch starts `skillos watch` as a process of its own on
    the accelerate process (seen from inside the launched job), as the trace says."""
    import sys

    import yaml

    from skillos import config as cfgmod
    from skillos.ledger import Ledger

    data = yaml.safe_load(SMOKE.read_text())
    data["compute"]["backend"] = "accelerate"
    config = tmp_path / "smoke-accelerate.yaml"
    config.write_text(yaml.safe_dump(data))
    with Ledger(canaries_passed / "ledger.db") as ledger:
        ledger.add_approval(cfgmod.load(config).plan_hash(), "0" * 64, {"plan": 1}, "person")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "accelerate").write_text(FAKE_ACCELERATE.format(python=sys.executable))
    (bin_dir / "accelerate").chmod(0o755)
    seen = tmp_path / "seen.txt"
    result = run_cli("train", config, cwd=tmp_path, env={"PATH": f"{bin_dir}:{os.environ['PATH']}",
                                                          "SEEN_WATCHDOG": str(seen)})
    assert result.returncode == 0, result.stderr[-2000:]
    watch = seen.read_text()
    assert "-m skillos watch" in watch and "--path checkpoints/" in watch, watch
    assert f"--ledger {canaries_passed / 'ledger.db'}" in watch
    trace = json.loads(run_cli("gate", "check", config, "--trace", "--json").stdout)["trace"]
    (row,) = [r for r in trace if r["key"] == "compute.watchdog"]
    assert row["applied"] and "accelerate" in row["consumer"] and "skillos watch" in row["arrived"]


def test_a_bad_backend_and_a_non_training_config_are_one_line_errors():
    bad = run_cli("train", PAPER, "--backend", "slurm", "--dry-run")
    assert bad.returncode == 2 and "compute.backend: 'slurm' is not one of" in bad.stderr
    assert "Traceback" not in bad.stderr
    quick = run_cli("train", ROOT / "evals" / "configs" / "quickstart.yaml")
    assert quick.returncode == 2 and "no training section" in quick.stderr


def test_only_a_complete_checkpoint_is_resumed_from(tmp_path):
    from skillos.training.common.grpo import newest_complete

    def checkpoint(step, recorded, weights=b"w"):
        path = tmp_path / f"checkpoint-{step}"
        path.mkdir()
        (path / "trainer_state.json").write_text(json.dumps({"global_step": recorded}))
        (path / "adapter_model.safetensors").write_bytes(weights)

    assert newest_complete(tmp_path) is None
    checkpoint(5, 5)
    checkpoint(10, 10, weights=b"")  # weights never written
    checkpoint(15, 10)  # state from another step: half-copied
    (tmp_path / "checkpoint-20").mkdir()  # nothing in it
    assert newest_complete(tmp_path) == str(tmp_path / "checkpoint-5")


def _with_four_completions(text):
    """The smoke config with four completions per step (one prompt still), the divergence declared."""
    for old, new in [("  num_generations: 2\n", "  num_generations: 4\n"),
                     ("  generation_batch_size: 2\n", "  generation_batch_size: 4\n"),
                     ("  per_device_train_batch_size: 2\n", "  per_device_train_batch_size: 4\n"),
                     ("training.num_generations: {value: 2, reason: \"two completions per step fit 2 CPU cores\"}",
                      "training.num_generations: {value: 4, reason: \"four completions: a step with a gradient whatever "
                      "the machine's floats\"}"),
                     ("one prompt x 2 completions per step fits 2 CPU cores", "one prompt x 4 completions per step")]:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


@pytest.mark.slow
@pytest.mark.alfworld
def test_a_cpu_run_writes_checkpoints_that_load_as_a_curator(tmp_path, game_cache, skillos_home):
    from skillos.config import CuratorConfig
    from skillos.errors import SkillosError
    from skillos.evals.envs.registry import environment
    from skillos.repo import SkillRepo
    from test_local_backends import _trajectory

    # four completions per step, not the shipped two: with two, both completions of both steps earned the
    # same reward in 2 of 4 seeds measured (no advantage, no gradient: which seeds depends on the machine's
    # float reduction order); with four, some step had a gradient in 5 of 5 seeds and thread counts
    config_file = tmp_path / "cpu-smoke-four.yaml"
    config_file.write_text(_with_four_completions(SMOKE.read_text()))
    result = run_cli("train", config_file, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)  # TRL's own logging stays off stdout
    health = [line for line in result.stderr.splitlines() if line.startswith("reward health:")]
    assert len(health) == 2 and all("of 2 over 4 rollouts" in line for line in health)
    # every run says whether its steps could move the weights, from TRL's own log keys
    steps = [line for line in result.stderr.splitlines() if line.startswith("learning signal: step")]
    assert len(steps) == 2 and all("frac_reward_zero_std" in line and "grad_norm" in line for line in steps)
    assert summary["signal"]["steps"] == 2 and summary["signal"]["line"] in result.stderr
    archive = tmp_path / "checkpoints" / "cpu-smoke" / "archive"
    # the smoke run moves its weights: a gradient in some step, in TRL's own trainer_state
    state = json.loads((archive / "checkpoint-2" / "trainer_state.json").read_text())
    assert any((h.get("grad_norm") or 0) > 0 for h in state["log_history"]), state["log_history"]
    assert summary["signal"]["grad_nonzero"] >= 1
    assert summary["checkpoints"] == [str(Path("checkpoints/cpu-smoke/archive") / f"checkpoint-{s}") for s in (1, 2)]
    for step in (1, 2):
        marker = json.loads((archive / f"checkpoint-{step}" / "skillos-curator.json").read_text())
        assert marker == {"tools": "curate_and_advance", "step": step, "env": "household"}
    # training.report_to's default: event files in the run folder that TensorBoard's own reader reads,
    # with the reward per step and its components beside TRL's numbers
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = sorted((tmp_path / "checkpoints" / "cpu-smoke" / "runs").glob("*/events.out.tfevents.*"))
    assert len(events) == 1
    board = EventAccumulator(str(events[0].parent))
    board.Reload()
    scalars = board.Tags()["scalars"]
    for tag in ("train/reward", "train/reward/r_task", "train/health/positions_measured_median", "train/kl", "train/entropy"):
        assert tag in scalars, (tag, scalars)
    assert [e.step for e in board.Scalars("train/reward")] == [1, 2]
    assert [e.step for e in board.Scalars("train/reward/r_task")] == [1, 2]
    db = sqlite3.connect(skillos_home / "ledger.db")
    assert [r[0] for r in db.execute("SELECT step FROM checkpoints ORDER BY step")] == [1, 2]
    assert db.execute("SELECT status FROM runs WHERE id = ?", (summary["run_id"],)).fetchone()[0] == "finished"

    curator = environment("household").make_curator(
        CuratorConfig(backend="hf", model=str(archive / "checkpoint-2"), temperature=0.0, max_tokens=64,
                      tools="curate_and_advance"), 3)
    repo = SkillRepo(None)
    curator.curate(_trajectory(False), repo)  # a LoRA checkpoint on its base, on the trained surface
    assert curator.unmeasured_calls == 0
    with pytest.raises(SkillosError, match="trained on the curate_and_advance tool surface"):
        environment("household").make_curator(CuratorConfig(backend="hf", model=str(archive / "checkpoint-2"),
                                                             tools="paper"), None)


def test_the_reward_function_judges_contents_and_neutralises_unmeasured_rollouts(monkeypatch):
    """TRL calls it with the batch's environments: it finishes each rollout, asks the judge
    (over HTTP) about inserted contents, and an all-unmeasured rollout gets its group's mean."""
    from llm_server import ScriptedLLM

    from skillos.evals.envs.household.heuristic import HeuristicExecutor
    from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame
    from skillos.evals.judge import make_judge
    from skillos.training.curator.env import CuratorEnv, Setup
    from skillos.training.curator.trainer import RewardFunction

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    games = {g.id: g for g in [ScriptedGame(f"ok-{i}") for i in range(3)]
             + [ScriptedGame(f"lost-{i}", path="missing") for i in range(3)]}
    setup = Setup(games, HeuristicExecutor(), ScriptedEnv, group_size=3, max_steps=3, top_k=5, retrieval_mode="bm25")
    played, lost = CuratorEnv(setup), CuratorEnv(setup)
    played.reset(game_ids=["ok-0", "ok-1", "ok-2"])
    played.curate_and_advance([{"op": "insert", "skill_name": "take-the-mug", "content": "Take the mug\nIt wins."}])
    lost.reset(game_ids=["lost-0", "lost-1", "lost-2"])
    cfg = cfgmod.load(SMOKE)
    cfg.reward.lambda_cnt = 0.1
    lines = []
    with ScriptedLLM(lambda m: '{"verdict": "VALID", "reason": "specific"}') as server:
        cfg.judge.backend, cfg.judge.model, cfg.judge.base_url = "openai", "judge", server.openai_url
        fn = RewardFunction(cfg, make_judge(cfg.judge), lines.append)
        totals = fn(prompts=[None, None], completions=[None, None], environments=[played, lost], group=[0, 0])
        judged = len(server.calls)
    step = fn.history[0]
    assert judged == 1  # one inserted content, one verdict
    # played: 1 valid op, then a turn with no call (the rollout stopped at position 2 of 3): 1/2;
    # lost: its one turn made no call: 0 of 1, measured (its total is still the group's mean)
    assert step["r_fc"] == [0.5, 0.0] and step["r_task"][1] is None
    assert totals[1] == totals[0]  # the lost rollout takes its group's mean: zero advantage
    assert "1 unmeasured rollouts neutralised" in lines[0] and "of 2 over 2 rollouts" in lines[0]


@pytest.mark.slow
@pytest.mark.alfworld
def test_a_killed_run_resumes_from_its_newest_complete_checkpoint(tmp_path, game_cache):
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "SKILLOS_CACHE": str(game_cache)}
    first = subprocess.Popen([sys.executable, "-m", "skillos", "train", str(SMOKE)], cwd=tmp_path, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    archive = tmp_path / "checkpoints" / "cpu-smoke" / "archive"
    deadline = time.monotonic() + 600
    while not (archive / "checkpoint-1").is_dir() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert not (archive / "checkpoint-2").exists(), "the run finished before it could be killed"
    again = run_cli("train", SMOKE, cwd=tmp_path, env={"SKILLOS_CACHE": str(game_cache)})
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resuming from checkpoints/cpu-smoke/checkpoint-1" in again.stderr
    assert sum(line.startswith("reward health:") for line in again.stderr.splitlines()) == 1  # step 2 only
    assert (archive / "checkpoint-2" / "skillos-curator.json").is_file()


def test_prompts_longer_than_max_prompt_length_are_cut_to_their_last_tokens():
    """training.max_prompt_length, applied: the trainer class cuts every tokenized prompt (TRL
    1.16 would have passed it whole), and counts the prompts it cut."""
    from skillos.errors import SkillosError
    from skillos.training.common.prompt_cap import PromptCap, cap_ids, capped

    assert cap_ids([1, 2, 3, 4, 5], 3) == ([3, 4, 5], True) and cap_ids([1, 2], 3) == ([1, 2], False)
    assert cap_ids([1, 2, 3], None) == ([1, 2, 3], False)

    class Base:  # TRL's method, as the trainer class calls it
        def __init__(self, limit):
            self.args, self.model, self._metrics = type("A", (), {"max_prompt_length": limit})(), \
                type("M", (), {"training": True})(), {"train": {"prompts/truncated": []}, "eval": {}}

        def _tokenize_prompts(self, prompts):
            return [list(range(n)) for n in prompts], None, {}

    trainer = capped(Base)(4)
    ids, _, _ = trainer._tokenize_prompts([10, 3])
    assert ids == [[6, 7, 8, 9], [0, 1, 2]] and trainer.truncated_prompts == 1
    assert trainer._metrics["train"]["prompts/truncated"] == [0.5]
    assert capped(Base)(None)._tokenize_prompts([10])[0] == [list(range(10))]
    assert issubclass(capped(Base), PromptCap)

    class Changed:
        def _tokenize_prompts(self, prompts, images):
            pass

    with pytest.raises(SkillosError, match="_tokenize_prompts"):
        capped(Changed)
    from trl import GRPOTrainer

    assert list(__import__("inspect").signature(GRPOTrainer._tokenize_prompts).parameters) == ["self", "prompts"]
