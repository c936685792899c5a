"""What a curator rollout's loss trains on: not the turn TRL generates after the last position.

TRL's tool loop generates a turn after every tool answer while it has iterations left, and a
curator run gives it the largest group's |G| - 1 (one call per position after the first). So the
answer to the call that played the group's last position is followed by one more generated turn. Every position has
been played by then: nothing in that turn can change the rollout's reward, yet TRL trains its
tokens with the rollout's advantage, a gradient from text that caused nothing. In the curator
canary's miniature (|G| = 3, call tokens) that was about 8 tokens of each rollout's ~24, a turn that
writes a skill name as the others do. In one look (docs/canaries.md, stop 78) the first turn moved by
type with it left out (heat 23, clean 27 of 36 writing their type's skill, from 16 and 13) and not with
it trained (18 and 17); one run each, with the probe's sampler and optimizer, not a claim.

Where the rollout used every iteration TRL allows, that turn is not generated at all (`masked_trainer`:
TRL's loop gets an empty turn for it, and the rollouts played ahead, training/curator/pipeline.py, stop
at the last answer): its calls would never run, so no reward can read it, and generating it re-reads
the whole conversation once more per rollout. Such a completion ends on its last tool answer (with
the assistant header TRL's tool suffix appends, tool-mask 0) and no end-of-turn token: TRL's
`completions/clipped_ratio` counts it as clipped, and TRL's `mask_truncated_completions` (not a
skillos key) would drop it from the loss. The cut below then finds nothing after the last answer; it
still acts on a trainer told to generate the turn (`generate_after_last_iteration`).

`leave_out_after_last_position` sets the tool mask (TRL's own "not the model's tokens" mask, which
the loss reads) to 0 from the end of the N-th tool answer on, N the call that played the last position
(RolloutState.last_call), where the count is vouched for: every call the environment answered was
made before the end (calls == last_call), the completion holds as many answers, and the last
position took all the iterations TRL allows (last_call == its cap, as in every group of a fixed
|G|). Then the cut is never before the last position's answer: runs come one per iteration in
order, an answer TRL gave itself (an argument error it caught) can only move the cut later onto
turns after the end, and no iteration is left for a rolled-back answer to hide in. Anything else (a
smaller group of a variable |G|, calls past the end, an answer rolled back past
max_completion_length) is kept as generated and counted. TRL computes its loss normaliser
(`num_items_in_batch`, read by dapo-style loss types; the shipped configs use grpo) before this runs.
"""

from __future__ import annotations

import contextvars

from skillos.training.common.turns import after_last_iteration, leave_out_from, skips_turn
from skillos.training.curator.env import state_of

# what one batch's masking counts: tokens left out, rollouts cut, rollouts kept as generated, and
# rollouts whose turn after the last iteration was never generated
KEYS = ("tokens", "rollouts", "not_vouched", "not_generated")

# the number of turns TRL's `_tool_call_loop` has generated so far, in the thread running it
_LOOP_TURNS: contextvars.ContextVar[list | None] = contextvars.ContextVar("skillos_loop_turns", default=None)


def leave_out_after_last_position(tool_mask, completion_mask, states, cap: int) -> dict:
    """Zero `tool_mask` (B, T) in place after the answer to each rollout's last-position call
    (`states`: each row's RolloutState, or None; `cap`: TRL's max_tool_calling_iterations); the
    counts of what it did."""
    counts = dict.fromkeys(KEYS, 0)
    for row, state in enumerate(states):
        if state is None or state.last_call is None:
            continue  # the rollout stopped on a turn without a call: that turn counts (r_fc), and is kept
        end = after_last_iteration(tool_mask[row], completion_mask[row], cap)  # cap answers, one per iteration
        if end is None or not state.calls == state.last_call == cap:
            counts["not_vouched"] += 1
            continue
        counts["tokens"] += leave_out_from(tool_mask, completion_mask, row, end)
        counts["rollouts"] += 1
    return counts


# what the trainer counts, summed over its batches (an async batch's view counts its own and hands
# them over: training/curator/async_rollouts.py); StepHealth takes them at each step's end
COUNTS = tuple(f"left_out_{key}" for key in KEYS)


def masked_trainer(base):
    """`base` (a GRPOTrainer subclass) that does not generate the turn after a rollout's last tool
    iteration and whose generated batches leave the turn after the last position out of the loss,
    counted in COUNTS (its `counters`, which an async batch's view hands over)."""

    class LastPositionMasked(base):
        counters = COUNTS
        generate_after_last_iteration = False  # read by the rollouts played ahead (pipeline.py) too

        def _tool_call_loop(self, *args, **kwargs):
            token = _LOOP_TURNS.set([0])
            try:
                return super()._tool_call_loop(*args, **kwargs)
            finally:
                _LOOP_TURNS.reset(token)

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations,
                                  has_tool_images=False):
            turns = _LOOP_TURNS.get()
            if turns is not None:  # TRL's loop generates once per iteration, after that iteration's answers
                turns[0] += 1
                if skips_turn(self, turns[0]):
                    self.left_out_not_generated += len(prompt_ids)
                    return [[] for _ in prompt_ids], [[] for _ in prompt_ids]
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                 has_tool_images)

        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            counts = leave_out(output, getattr(self, "environments", None), self.max_tool_calling_iterations)
            for key, name in zip(KEYS, COUNTS):
                setattr(self, name, getattr(self, name) + (counts or {}).get(key, 0))
            return output

    for name in COUNTS:
        setattr(LastPositionMasked, name, 0)
    return LastPositionMasked


def take_counts(trainer) -> dict | None:
    """COUNTS since the last take, zeroed (None for a trainer that does not mask)."""
    if not hasattr(trainer, COUNTS[0]):
        return None
    counts = {key: getattr(trainer, name) for key, name in zip(KEYS, COUNTS)}
    for name in COUNTS:
        setattr(trainer, name, 0)
    return counts


def leave_out(output: dict, environments, cap: int) -> dict | None:
    """The same on a batch TRL generated (`_generate_and_score_completions`' output) and the
    environments it played, row by row; None where it has no tool mask (no tool was called)."""
    tool_mask = output.get("tool_mask")
    if tool_mask is None:
        return None
    states = [state_of(env) for env in environments or []]
    if len(states) != tool_mask.shape[0]:
        return {**dict.fromkeys(KEYS, 0), "not_vouched": tool_mask.shape[0]}
    return leave_out_after_last_position(tool_mask, output["completion_mask"], states, cap)


def left_out_line(counts: dict | None) -> str:
    """The health line's clause for a step's counts ("" for a trainer that does not mask)."""
    if counts is None:
        return ""
    line = f"; the turn after the last position not generated in {counts['not_generated']} rollouts"
    if counts["tokens"]:  # a turn was generated after the last answer (a trainer told to) and cut
        line += f", left out of the loss: {counts['tokens']} tokens in {counts['rollouts']} rollouts"
    if counts["not_vouched"]:
        line += (f"; kept as generated where its tool answers and the environment's calls did not match: "
                 f"{counts['not_vouched']} of the rollouts")
    return line
