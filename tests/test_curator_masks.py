"""The turn TRL generates after a curator rollout's last position is left out of the loss
(training/curator/masks.py): where the count of tool answers is vouched for, from the end of the
answer to the call that played the last position; a rollout that stopped early, or one whose
answers and calls do not line up, is kept as TRL made it and counted."""

import torch

from skillos.training.curator.env import CuratorEnv, RolloutState, Setup, state_of
from skillos.training.curator.masks import (COUNTS, leave_out, leave_out_after_last_position,
                                            left_out_line, masked_trainer, take_counts)

T, A = 1, 0  # a model token, a tool-answer token (TRL's tool_mask)


def _row(*spans, width=16):
    """(tool_mask, completion_mask) of one completion: spans of (kind, length), right-padded as TRL pads."""
    tool = [kind for kind, n in spans for _ in range(n)]
    pad = width - len(tool)
    return tool + [1] * pad, [1] * len(tool) + [0] * pad


def _batch(*rows):
    tool, completion = zip(*rows)
    return torch.tensor(tool), torch.tensor(completion)


def _state(calls, last_call, n=3):
    state = RolloutState([f"g{i}" for i in range(n)], "t")
    state.calls, state.last_call = calls, last_call
    return state


def test_the_turn_after_the_last_position_leaves_the_loss_and_nothing_else_does():
    whole = _row((T, 3), (A, 2), (T, 2), (A, 2), (T, 4))         # |G| 3: two calls, then the turn after
    stopped = _row((T, 3), (A, 2), (T, 5))                         # no second call: that turn counts (r_fc)
    trl_answered = _row((T, 2), (A, 1), (T, 2), (A, 1), (T, 2), (A, 1), (T, 3))  # 3 answers, 2 calls reached the env
    short_group = _row((T, 2), (A, 2), (T, 2), (A, 1), (T, 3))    # a group of 2 under a cap of 2: a call past its end
    tool, completion = _batch(whole, stopped, trl_answered, short_group)
    before = tool.clone()
    states = [_state(2, 2), _state(1, None), _state(2, 2), _state(2, 1, n=2)]
    counts = leave_out_after_last_position(tool, completion, states, cap=2)
    assert counts == {"tokens": 4, "rollouts": 1, "not_vouched": 2, "not_generated": 0}
    assert tool[0].tolist()[:9] == before[0].tolist()[:9] and tool[0].tolist()[9:] == [0] * 7
    for row in (1, 2, 3):  # kept as TRL made them
        assert torch.equal(tool[row], before[row])
    loss_tokens = (tool * completion).sum(1).tolist()
    assert loss_tokens == [5, 8, 9, 7]


def test_an_answer_trl_gave_itself_never_moves_the_cut_before_the_last_position():
    # turn 1's call failed in TRL (its own answer, no call reached the env); turn 2 called twice in one
    # turn, playing positions 2 and 3 (one answer run): counts match (2 runs, 2 calls, last call 2) and
    # the cut falls at the end of the run that played position 3, not earlier
    merged = _row((T, 2), (A, 1), (T, 3), (A, 3), (T, 4))
    tool, completion = _batch(merged)
    counts = leave_out_after_last_position(tool, completion, [_state(2, 2)], cap=2)
    assert counts == {"tokens": 4, "rollouts": 1, "not_vouched": 0, "not_generated": 0}
    assert (tool[0] * completion[0]).tolist()[:9] == [1, 1, 0, 1, 1, 1, 0, 0, 0] and tool[0, 9:].sum() == 0


def test_a_smaller_group_whose_last_answer_was_rolled_back_is_kept():
    # a group of 2 under a cap of 2 (a variable |G|): turn 1's call failed in TRL (its own answer), turn 2
    # played position 2 but its overlong answer was rolled back: one run, one call, last call 1, and the
    # only run is not the last position's; kept as generated, turn 2 still trained
    rolled_back = _row((T, 2), (A, 1), (T, 5))
    tool, completion = _batch(rolled_back)
    before = tool.clone()
    counts = leave_out_after_last_position(tool, completion, [_state(1, 1, n=2)], cap=2)
    assert counts == {"tokens": 0, "rollouts": 0, "not_vouched": 1, "not_generated": 0} and torch.equal(tool, before)


def test_the_environment_records_the_call_that_played_the_last_position():
    from skillos.evals.envs.household.heuristic import HeuristicExecutor
    from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame

    games = {f"g{i}": ScriptedGame(f"g{i}") for i in range(3)}
    setup = Setup(games, HeuristicExecutor(), lambda: ScriptedEnv(("look", "wait"), None), group_size=3,
                  max_steps=4, top_k=5, retrieval_mode="bm25")
    env = CuratorEnv(setup)
    env.reset(game_ids=["g0", "g1", "g2"], task_type="t")
    env.curate_and_advance([])
    assert state_of(env).last_call is None  # position 3 is still to play
    env.curate_and_advance([])
    assert state_of(env).last_call == 2 and state_of(env).calls == 2
    assert "over" in env.curate_and_advance([])  # a call past the end is answered and counted, not played
    assert state_of(env).last_call == 2 and state_of(env).calls == 3 and len(state_of(env).positions) == 3


def test_a_trainer_masks_every_batch_it_generates_and_its_counts_are_taken_per_step():
    tool, completion = _batch(_row((T, 3), (A, 2), (T, 2), (A, 2), (T, 4)), _row((T, 3), (A, 2), (T, 5)))

    class Env:
        def __init__(self, state):
            self._state = state

    class Base:
        environments = [Env(_state(2, 2)), Env(_state(1, None))]
        max_tool_calling_iterations = 2

        def _generate_and_score_completions(self, inputs):
            return {"tool_mask": tool.clone(), "completion_mask": completion}

    trainer = masked_trainer(Base)()
    assert take_counts(Base()) is None and left_out_line(None) == ""  # a trainer that does not mask says nothing
    out = trainer._generate_and_score_completions([])
    assert out["tool_mask"][0, 9:].sum() == 0 and torch.equal(out["tool_mask"][1], tool[1])
    trainer._generate_and_score_completions([])
    counts = take_counts(trainer)
    assert counts == {"tokens": 8, "rollouts": 2, "not_vouched": 0, "not_generated": 0}
    # taken: the next step starts at 0
    assert take_counts(trainer) == {"tokens": 0, "rollouts": 0, "not_vouched": 0, "not_generated": 0}
    assert left_out_line(counts) == ("; the turn after the last position not generated in 0 rollouts, left out of the "
                                     "loss: 8 tokens in 2 rollouts")
    skipped = {"tokens": 0, "rollouts": 16, "not_vouched": 0, "not_generated": 16}
    assert left_out_line(skipped) == "; the turn after the last position not generated in 16 rollouts"
    kept = {"tokens": 0, "rollouts": 0, "not_vouched": 1, "not_generated": 0}
    assert left_out_line(kept).endswith("did not match: 1 of the rollouts")


def test_every_curator_trainer_class_masks_and_hands_its_counts_to_an_async_view():
    from conftest import ROOT
    from skillos import config as cfgmod
    from skillos.training.curator.trainer import trainer_class

    cfg = cfgmod.load(ROOT / "training" / "configs" / "cpu-smoke.yaml")
    for async_rollouts in (False, True):
        cfg.training.async_rollouts = async_rollouts
        cls = trainer_class(cfg)
        assert "LastPositionMasked" in [c.__name__ for c in cls.__mro__]
        assert cls.counters == COUNTS and all(getattr(cls, name) == 0 for name in COUNTS)


def test_a_batch_whose_environments_do_not_line_up_is_kept_and_counted():
    tool, completion = _batch(_row((T, 3), (A, 2), (T, 4)))
    output = {"tool_mask": tool.clone(), "completion_mask": completion}
    assert leave_out(output, [], cap=2) == {"tokens": 0, "rollouts": 0, "not_vouched": 1, "not_generated": 0}
    assert torch.equal(output["tool_mask"], tool)
    assert leave_out({"completion_mask": completion}, [], cap=2) is None  # no tool called: nothing to leave out


def test_a_rollout_that_ends_on_its_last_answer_is_vouched_and_nothing_is_cut():
    # the turn after the last iteration was not generated (masks.masked_trainer): the completion ends on
    # the cap-th answer run, right-padded; the count is vouched for and no model token is taken out
    ended = _row((T, 3), (A, 2), (T, 2), (A, 3))
    tool, completion = _batch(ended)
    before = tool.clone()
    counts = leave_out_after_last_position(tool, completion, [_state(2, 2)], cap=2)
    assert counts == {"tokens": 0, "rollouts": 1, "not_vouched": 0, "not_generated": 0}
    assert torch.equal(tool[0, :10], before[0, :10])  # every model token still trained
