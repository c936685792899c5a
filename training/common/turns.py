"""Where a multi-turn rollout's tool answers sit in its completion, and the turn TRL generates
after its last tool iteration.

TRL's tool loop (1.16) appends each iteration's tool answers as one run of tokens its tool mask
marks 0 (not the model's), and generates the next turn after them while iterations are left; when
the rollout reaches `max_tool_calling_iterations` it still generates the turn after the last
answers, and executes no call in it. That turn changes nothing an environment measures, yet TRL
trains it with the rollout's advantage. The curator trainer does not generate it, and leaves it out
of the loss where one was generated and it can vouch for the count (training/curator/masks.py); the
selector trainer leaves it out of the loss and of its credit (training/selector/grpo.py).
"""

from __future__ import annotations


def answer_ends(tool_mask, completion_mask) -> list[int]:
    """The index just past each tool answer (a run of tool_mask 0 inside the completion) in one row."""
    inside = completion_mask.bool()
    answer = (tool_mask == 0) & inside
    ends = answer.clone()
    ends[:-1] &= ~answer[1:]
    return [int(i) + 1 for i in ends.nonzero().flatten()]


def after_last_iteration(tool_mask, completion_mask, cap: int) -> int | None:
    """Where the turn generated after the last tool iteration starts in one row: the end of the
    cap-th answer run, when the row holds exactly `cap` (one run per iteration); None otherwise
    (the rollout stopped on a turn without a call, or the count is not TRL's)."""
    ends = answer_ends(tool_mask, completion_mask)
    return ends[-1] if cap and len(ends) == cap else None


def leave_out_from(tool_mask, completion_mask, row: int, start: int) -> int:
    """Zero `tool_mask` (B, T) in place from `start` on in `row`; the model tokens it took out of the loss."""
    tokens = int((tool_mask[row, start:] * completion_mask[row, start:]).sum())
    tool_mask[row, start:] = 0
    return tokens


def leave_out_after_last_iteration(tool_mask, completion_mask, cap: int) -> list[int]:
    """Zero `tool_mask` (B, T) in place from where each row's turn after the last tool iteration
    starts (after_last_iteration); each row's tokens left out (0: kept as generated)."""
    left_out = []
    for row in range(tool_mask.shape[0]):
        cut = after_last_iteration(tool_mask[row], completion_mask[row], cap)
        left_out.append(0 if cut is None else leave_out_from(tool_mask, completion_mask, row, cut))
    return left_out


def skips_turn(trainer, iterations_answered: int) -> bool:
    """Whether the turn after `iterations_answered` tool iterations is not generated: the last one
    TRL allows has been answered and the trainer skips what follows it (its
    `generate_after_last_iteration` False: the curator's, training/curator/masks.py). The one rule for
    TRL's loop and for the rollouts played ahead (training/curator/pipeline.py)."""
    return (iterations_answered >= trainer.max_tool_calling_iterations
            and not getattr(trainer, "generate_after_last_iteration", True))
