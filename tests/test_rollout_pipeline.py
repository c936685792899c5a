"""Rollouts without round barriers (training/curator/pipeline.py): each rollout plays its tool rounds ahead
of TRL's loop, and TRL's own `_tool_call_loop` gets from it exactly what it computes one rollout at
a time. (The real GRPO step on the tiny warmed-up curator, concurrent against TRL's own loop, is
tests/test_rollouts.py's slow test.)"""

import time

TOOL, EOS = 7, 0


def _fake_parse(tokenizer, ids, prefix=None, tools=None):
    """A completion [TOOL, x, EOS] is one curate_and_advance call inserting skill-x; else plain text."""
    if ids and ids[0] == TOOL:
        op = {"op": "insert", "skill_name": f"skill-{ids[1]}", "content": "Look first\nThen wait."}
        return {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "curate_and_advance", "arguments": {"operations": [op]}}}]}
    return {"role": "assistant", "content": "done"}


def _fake_trainer_class(concurrency, gauge, on_done=None):
    """TRL's real `_tool_call_loop` on a trainer with no model: a turn is a fixed function of its
    input ids (a tool call, except rollout 3's second turn), a tool suffix is one token per message."""
    from types import SimpleNamespace

    from trl import GRPOTrainer

    from skillos.training.curator.rollouts import rollout_trainer

    class NoModel(GRPOTrainer):
        def __init__(self, envs):
            self.environments, self.max_tool_calling_iterations, self.max_completion_length = envs, 2, 10_000
            self._sync_tool_dicts = [{"curate_and_advance": e.curate_and_advance} for e in envs]
            self._async_tool_dicts = [{} for _ in envs]
            self.use_vllm, self._is_vlm, self.tools, self.environment_factories = False, False, [object()], None
            self.model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=8192))
            self.processing_class = self._tokenizer = None  # TRL reads its own; the pipeline the public one
            self.turns = []

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            self.turns.append(len(prompt_ids))
            out = [[EOS] if ids[0] == 3 and len(ids) > 5 else [TOOL, len(ids) % 5, EOS] for ids in prompt_ids]
            return out, None

        def _get_tool_suffix_ids(self, tool_messages):
            return [100 + len(m["content"]) % 50 for m in tool_messages]

    return rollout_trainer(concurrency, gauge, NoModel, on_done=on_done)


class Timed:
    """The heuristic executor, each action taking 10 ms, or 40 ms when an odd number of skills was
    retrieved: rollouts' games take different times, so a round waits for its slowest."""

    def __init__(self, gauge):
        from skillos.evals.envs.household.heuristic import HeuristicExecutor

        self.inner, self.name, self.gauge = HeuristicExecutor(), "timed", gauge

    def new_episode(self, task, skills):
        episode, gauge = self.inner.new_episode(task, skills), self.gauge
        delay = 0.01 * (1 + 3 * (len(skills) % 2))

        class Slow:
            def act(self, observation, admissible):
                gauge.enter()
                try:
                    time.sleep(delay)
                    return episode.act(observation, admissible)
                finally:
                    gauge.exit()

        return Slow()


def _loop(concurrency, monkeypatch, n=4, masked=False):
    from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame
    from skillos.training.curator.env import CuratorEnv, Setup, finish
    from skillos.training.curator.masks import masked_trainer
    from skillos.training.curator.rollouts import InFlight, _ACTIVE

    monkeypatch.setattr("trl.trainer.grpo_trainer.parse_response", _fake_parse)
    gauge = InFlight()
    games = {f"g{i}": ScriptedGame(f"g{i}", task=f"put a mug in the coffeemachine {i}") for i in range(3)}
    setup = Setup(games, Timed(gauge), lambda: ScriptedEnv(("look", "wait"), None), group_size=3, max_steps=3, top_k=5,
                  retrieval_mode="bm25")
    envs = [CuratorEnv(setup) for _ in range(n)]
    cls = _fake_trainer_class(concurrency, gauge, finish)
    trainer = (masked_trainer(cls) if masked else cls)(envs)
    prompt_ids = [[i, 1, 2] for i in range(n)]
    first = [env.reset(game_ids=[f"g{(i + k) % 3}" for k in range(3)]) for i, env in enumerate(envs)]
    completion_ids = [[TOOL, i, EOS] for i in range(n)]
    completions = [[_fake_parse(None, ids)] for ids in completion_ids]
    prompts = [[{"role": "user", "content": text}] for text in first]
    gauge.start()
    out = trainer._tool_call_loop(prompts, prompt_ids, completion_ids, completions, None, None, {})
    window = gauge.stop()
    rollouts = [finish(env) for env in envs]
    return out, rollouts, window, trainer


def test_the_tool_rounds_played_ahead_hand_trl_the_loop_it_computes_itself(monkeypatch):
    """TRL's own `_tool_call_loop` with no model: played ahead per rollout it returns the same
    masks, completions and token ids as one rollout at a time, every rollout ends with the same
    positions and operations, and no call or turn is made on the spot."""
    (mask, completions, ids, _, calls, failures, _), rollouts, window, trainer = _loop(1, monkeypatch)
    (mask2, completions2, ids2, _, calls2, failures2, _), rollouts2, window2, trainer2 = _loop(None, monkeypatch)
    assert (mask2, completions2, ids2, calls2, failures2) == (mask, completions, ids, calls, failures)
    assert rollouts2 == rollouts and [len(r.positions) for r in rollouts2] == [3] * 4
    assert all(p is not None for r in rollouts for p in r.positions)  # every game measured
    assert trainer.turns == [4, 3] and sum(trainer2.turns) == 7  # rollout 3 stopped after one call
    # rollout 3's unreached position (3 actions) is played ahead, in the phase, not after it
    assert window.peak == 1 and window2.peak == 4 and window2.requests == window.requests + 3
    assert trainer2._tool_unplanned == 0 and window2.seconds < window.seconds


def test_the_turn_after_the_last_iteration_is_not_generated_and_both_loops_agree(monkeypatch):
    """With the curator's mask (training/curator/masks.py) the turn TRL would generate after a
    rollout's last tool iteration (its calls never run) is not generated, by TRL's loop or by the
    rollouts played ahead: the same masks, completions and ids either way, each ending with the last
    answer; every call still made and every position played; the skipped turns counted."""
    from skillos.training.curator.masks import take_counts

    (mask, completions, ids, _, calls, failures, _), rollouts, _, trainer = _loop(1, monkeypatch, masked=True)
    (mask2, completions2, ids2, _, calls2, failures2, _), rollouts2, _, trainer2 = _loop(None, monkeypatch, masked=True)
    assert (mask2, completions2, ids2, calls2, failures2) == (mask, completions, ids, calls, failures)
    assert trainer.turns == [4] and sum(trainer2.turns) == 4  # not [4, 3]: the three post-cap turns are gone
    assert calls == 7 and rollouts2 == rollouts and [len(r.positions) for r in rollouts] == [3] * 4
    for row in (0, 1, 2):  # two calls each, the cap: ends on the second answer (tool-mask 0, a tool message)
        assert completions[row][-1]["role"] == "tool" and mask[row][-1] == 0
    assert completions[3][-1]["role"] == "assistant" and mask[3][-1] == 1  # stopped on its own turn: kept
    (unmasked, _, _, _, _, _, _), _, _, plain = _loop(1, monkeypatch)
    assert plain.turns == [4, 3] and all(len(unmasked[r]) == len(mask[r]) + 3 for r in (0, 1, 2))  # [TOOL, x, EOS]
    assert take_counts(trainer)["not_generated"] == 3 and take_counts(trainer2)["not_generated"] == 3
    assert trainer2._tool_unplanned == 0
