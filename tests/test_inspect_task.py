"""The inspect_ai task plays skillos's ALFWorld games through inspect's own skill() tool and an
act() tool on the real engine, scored as skillos scores a game; run here with inspect's mock
model: the game's own walkthrough wins it, a model that only looks loses it."""

import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from skillos.evals import inspect_task

MOCK = "mockllm/model"


def _skills(tmp_path) -> Path:
    repo = tmp_path / "repo"
    (repo / "find-things").mkdir(parents=True, exist_ok=True)
    (repo / "find-things" / "SKILL.md").write_text(
        "---\nname: find-things\ndescription: Where household objects usually are.\n---\n"
        "Look in cabinets and drawers first; open them before taking anything.\n")
    return repo


def _call(tool: str, command: str) -> ModelOutput:
    out = ModelOutput.for_tool_call(MOCK, tool, {"command": command})
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # else the mock counts with tiktoken,
    return out  # which downloads its encoding (no network here)


def _play(tmp_path, commands, max_steps):
    outputs = [_call("skill", "find-things")] + [_call("act", c) for c in commands]
    task = inspect_task.alfworld_skills(skills=str(_skills(tmp_path)), n_games=1, max_steps=max_steps)
    (log,) = inspect_eval(task, model=get_model(MOCK, custom_outputs=outputs), log_dir=str(tmp_path / "logs"),
                          display="none", max_samples=1)
    assert log.status == "success", log.error
    (sample,) = log.samples
    return sample


def test_the_walkthrough_wins_and_looking_loses(tmp_path, game_cache):
    (game,) = inspect_task.games(1, "valid_unseen", 0)
    walkthrough = json.loads(Path(game.path).read_text())["walkthrough"]
    won = _play(tmp_path, walkthrough, max_steps=30)
    assert won.scores["won"].value == "C" and won.store["steps"] == len(walkthrough)
    shown = [m.text for m in won.messages if m.role == "tool" and m.function == "skill"]
    assert shown and "open them before taking anything" in shown[0]  # the skill reached the model via skill()
    lost = _play(tmp_path, ["look", "fly to the moon", "look"], max_steps=3)
    assert lost.scores["won"].value == "I" and lost.store["steps"] == 3  # the refused command spent a step
    refused = [m for m in lost.messages if m.role == "tool" and m.function == "act" and m.error]
    assert len(refused) == 1 and "not admissible" in refused[0].error.message


def test_the_step_limit_holds_within_one_turn(tmp_path, game_cache):
    """A model that sends several act() calls in one turn cannot play past max_steps: the
    walkthrough sent whole with a limit shorter than it is refused after the limit, and loses."""
    from inspect_ai.model import ChatMessageAssistant
    from inspect_ai.tool import ToolCall

    (game,) = inspect_task.games(1, "valid_unseen", 0)
    walkthrough = json.loads(Path(game.path).read_text())["walkthrough"]
    calls = [ToolCall(id=f"c{i}", function="act", arguments={"command": c}) for i, c in enumerate(walkthrough)]
    burst = ModelOutput.from_message(ChatMessageAssistant(content="", tool_calls=calls, model=MOCK))
    burst.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    limit = len(walkthrough) - 1
    task = inspect_task.alfworld_skills(n_games=1, max_steps=limit)
    (log,) = inspect_eval(task, model=get_model(MOCK, custom_outputs=[burst]), log_dir=str(tmp_path / "logs"),
                          display="none", max_samples=1)
    (sample,) = log.samples
    assert sample.scores["won"].value == "I" and sample.store["steps"] == limit
    spent = [m for m in sample.messages if m.role == "tool" and m.error and "step limit" in m.error.message]
    assert len(spent) == 1


def test_a_missing_skill_folder_is_one_line():
    from skillos.errors import SkillosError

    with pytest.raises(SkillosError, match="not a folder of skills"):
        inspect_task.skill_folders("/nowhere/at/all")


def test_inspect_finds_the_task_by_its_package_name(tmp_path):
    """`inspect eval skillos/alfworld_skills` resolves through pyproject's inspect_ai entry point
    (outside the repo: inspect names a task found under the working directory without its package)."""
    import subprocess
    import sys

    code = ("from inspect_ai._util.registry import registry_lookup; "
            "print(registry_lookup('task', 'skillos/alfworld_skills') is not None)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "True", done.stderr[-500:]
