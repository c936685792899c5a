"""The local-model backends: hf (transformers, CPU here) on the tiny model built with no
download, and vllm's refusal on a machine without it. The model is real: a warmed-up tiny
Qwen2 that writes curate_and_advance calls, parsed from the text it generates."""

import json

import pytest
from conftest import ROOT, run_cli

from skillos.config import CuratorConfig
from skillos.errors import SkillosError
from skillos.evals.backends.chat import BackendError, make_chat, parse_generated
from skillos.evals.curation import CURATE_AND_ADVANCE, SURFACE_FILE, TOOL_SURFACES
from skillos.repo import SkillRepo


def _trajectory(won=True):
    """A game like the warm-up's first: the tiny model is too small to generalise the format
    far, and this test is about the plumbing (template, generation, parsing, the repo edit)."""
    from skillos.evals.trajectory import Step, Trajectory
    from skillos.training.common.warmup import TASKS

    return Trajectory("g1", TASKS[0][0], "pick_and_place_simple",
                      steps=[Step("look", "You are in the middle of a room.")], won=won, retrieved=[])


def test_parse_generated_reads_tool_calls_reasoning_and_refuses_nothing_silently():
    text = ('<think>The mug task failed.</think>Adding a skill.\n<tool_call>\n{"name": "curate_and_advance", '
            '"arguments": {"operations": []}}\n</tool_call>\n<tool_call>{"name": broken</tool_call>')
    result = parse_generated(text)
    assert result.reasoning == "The mug task failed."
    assert result.text == "Adding a skill."
    assert result.tool_calls[0] == {"name": "curate_and_advance", "arguments": {"operations": []}}
    assert result.tool_calls[1]["name"] == "_unparsed"  # becomes an invalid operation, counted
    opened_in_prompt = parse_generated("weighing it</think><action>look</action>")
    assert opened_in_prompt.reasoning == "weighing it" and opened_in_prompt.text == "<action>look</action>"


def test_the_eval_schema_is_the_one_trl_builds_from_the_training_env():
    from transformers.utils import get_json_schema

    from skillos.training.curator.env import CuratorEnv

    assert get_json_schema(CuratorEnv.curate_and_advance) == CURATE_AND_ADVANCE


def test_an_hf_curator_generates_tool_calls_that_edit_the_repo(tiny_curator):
    from skillos.evals.backends.llm_curator import LLMCurator

    curator = LLMCurator(CuratorConfig(backend="hf", model=tiny_curator, temperature=0.0, max_tokens=120,
                                       tools="curate_and_advance"), horizon=3)
    repo = SkillRepo(None)
    applied = curator.curate(_trajectory(False), repo)  # TASKS[0] failed
    assert applied and all(a.ok for a in applied), [a.line for a in applied]
    assert len(repo) == 1 and repo.skills[0].description
    curator.curate(_trajectory(), repo)  # the second game arrives as the tool response
    assert [m["role"] for m in curator._messages][:4] == ["system", "user", "assistant", "tool"]
    assert curator.unmeasured_calls == 0


def test_hf_chat_reports_tokens_and_a_timeout_is_a_backend_error(tiny_curator):
    chat = make_chat(CuratorConfig(backend="hf", model=tiny_curator, temperature=0.0, max_tokens=120))
    reply = chat.chat([{"role": "user", "content": "Task 1 of 3: cool a potato"}],
                      tools=TOOL_SURFACES["curate_and_advance"])
    assert reply.prompt_tokens > 100 and 0 < reply.completion_tokens <= 120
    slow = make_chat(CuratorConfig(backend="hf", model="tiny-qwen2", temperature=1.0, max_tokens=4000,
                                   timeout_s=0.05))
    with pytest.raises(BackendError, match="timeout"):
        slow.chat([{"role": "user", "content": "say a lot"}])


def test_an_hf_executor_counts_every_fallback_as_coerced(game_cache):
    """A random model never answers with an admissible action: one reformat retry each step,
    then the runner's fallback, and every such step is counted as coerced."""
    from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame
    from skillos.evals.envs.registry import environment
    from skillos.evals.runner import play

    executor = environment("household").make_executor(CuratorConfig(backend="hf", model="tiny-qwen2", temperature=1.0,
                                                                      max_tokens=8))
    traj = play(ScriptedEnv(win_action=None), executor, None, ScriptedGame("g1"), max_steps=3, top_k=0)
    assert len(traj.steps) == 3 and traj.coerced == 3


def test_a_lora_adapter_loads_on_its_base(tiny_curator, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    adapter = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_curator),
                             LoraConfig(r=4, target_modules="all-linear"))
    adapter.save_pretrained(tmp_path / "adapter")
    AutoTokenizer.from_pretrained(tiny_curator).save_pretrained(tmp_path / "adapter")
    chat = make_chat(CuratorConfig(backend="hf", model=str(tmp_path / "adapter"), temperature=0.0, max_tokens=120))
    from peft import PeftModel

    assert isinstance(chat.net, PeftModel)
    from skillos.training.common.warmup import curator_examples

    reply = chat.chat(curator_examples()[0][:-1], tools=TOOL_SURFACES["curate_and_advance"])
    assert reply.tool_calls and reply.tool_calls[0]["name"] == "curate_and_advance"  # LoRA init is the identity


def test_a_checkpoint_refuses_a_tool_surface_it_was_not_trained_on(tiny_curator):
    from skillos.evals.envs.registry import environment

    (__import__("pathlib").Path(tiny_curator) / SURFACE_FILE).write_text(json.dumps({"tools": "curate_and_advance"}))
    try:
        with pytest.raises(SkillosError, match="set curator.tools: curate_and_advance"):
            environment("household").make_curator(CuratorConfig(backend="hf", model=tiny_curator, tools="paper"),
                                                  None)
    finally:
        (__import__("pathlib").Path(tiny_curator) / SURFACE_FILE).unlink()


@pytest.mark.parametrize("model, message", [
    ("/nowhere/weights", "not a weights folder"),
    ("Qwen/Qwen-not-cached", "not an org/name in the local hub cache"),
])
def test_a_model_that_is_not_here_is_a_one_line_error(model, message):
    with pytest.raises(SkillosError, match=message) as caught:
        make_chat(CuratorConfig(backend="hf", model=model))
    assert "\n" not in str(caught.value)


def test_vllm_without_vllm_says_what_to_do():
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vllm is installed here; this checks the machine without it")
    with pytest.raises(SkillosError, match="needs a GPU machine with vllm installed"):
        make_chat(CuratorConfig(backend="vllm", model="tiny-qwen2"))


def test_arms_that_run_weights_here_start_their_workers_fresh():
    """Forking a process whose torch has started can hang the child (measured: hf arm workers at
    0 CPU seconds for 9 minutes) and a forked child cannot use CUDA again: such evals spawn."""
    from skillos import config as cfgmod
    from skillos.evals.experiment import start_method

    base = cfgmod.load(ROOT / "evals" / "configs" / "quickstart.yaml")
    assert start_method(base) == "fork"
    for key in ("executor", "curator", "judge"):
        assert start_method(cfgmod.with_sets(base, [f"{key}.backend=hf", f"{key}.model=tiny-qwen2"])) == "spawn"


@pytest.mark.slow
@pytest.mark.alfworld
def test_an_hf_eval_with_a_worker_per_arm_finishes(tmp_path, game_cache, skillos_home):
    """The GPU check's hf eval with one worker per arm (spawned): it used to hang after the gates
    ran the model in the parent."""
    result = run_cli("eval", ROOT / "tests" / "gpu" / "hf-games.yaml", "--json", "--out", tmp_path / "run",
                     "--set", "eval.workers=2", "--set", "env.n_games=1", "--set", "env.n_train_games=1",
                     "--set", "env.max_steps=3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    arms = json.loads(result.stdout)["arms"]
    assert {a: arms[a]["attempted"] for a in arms} == {"no_memory": 1, "closed_loop": 1}
