"""Where a rollout's tool answers sit, and the turn TRL generates after its last tool iteration
(training/common/turns.py): found inside the completion only, cut only where the row holds one
answer run per iteration allowed."""

import torch

from skillos.training.common.turns import after_last_iteration, answer_ends, leave_out_after_last_iteration

T, A = 1, 0  # a model token, a tool-answer token (TRL's tool_mask)


def _row(*runs, pad=0):
    """(tool_mask, completion_mask) of runs of (kind, length), then `pad` padding tokens."""
    tool = [kind for kind, n in runs for _ in range(n)] + [1] * pad
    return tool, [1] * (len(tool) - pad) + [0] * pad


def test_answer_ends_are_found_inside_the_completion_only():
    tool, completion = _row((T, 3), (A, 2), (T, 2), (A, 1), (T, 1))
    assert answer_ends(torch.tensor(tool), torch.tensor(completion)) == [5, 8]
    tool, completion = _row((T, 3))  # no answer
    assert answer_ends(torch.tensor(tool), torch.tensor(completion)) == []
    tool = [1, 1, 1, 0, 0, 0]  # a 0 past the completion's end is not an answer
    assert answer_ends(torch.tensor(tool), torch.tensor([1, 1, 1, 0, 0, 0])) == []


def test_the_turn_after_the_last_iteration_is_cut_only_when_every_iteration_answered():
    tool, completion = _row((T, 3), (A, 2), (T, 2), (A, 1), (T, 4), pad=2)
    assert after_last_iteration(torch.tensor(tool), torch.tensor(completion), 2) == 8
    assert after_last_iteration(torch.tensor(tool), torch.tensor(completion), 3) is None  # stopped by itself
    assert after_last_iteration(torch.tensor(tool), torch.tensor(completion), 0) is None
    stopped, completion2 = _row((T, 3), (A, 2), (T, 7), pad=2)
    masks = torch.tensor([tool, stopped])
    left_out = leave_out_after_last_iteration(masks, torch.tensor([completion, completion2]), 2)
    assert left_out == [4, 0]  # the turn after the cut, less its padding; the stopped row kept
    assert masks[0].tolist() == tool[:8] + [0] * 6 and masks[1].tolist() == stopped  # in place, that row only
