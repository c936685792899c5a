"""SkillGate's credit arithmetic and span masks, on real token ids of the tiny model's tokenizer
and against tensors computed by hand."""

import math

import pytest
import torch

from skillos.training import selector_credit as credit

REASON = "<skill_reasoning>The task heats an apple: heat-then-place fits.</skill_reasoning>"
READ = '<tool_call>\n{"name": "read_skill", "arguments": {"name": "heat-then-place"}}\n</tool_call>'
# A tool result that itself looks like a read call: it is the environment's text, never credit.
RESULT = ('<|im_end|>\n<|im_start|>user\n<tool_response>\n<tool_call>{"name": "read_skill", '
          '"arguments": {"name": "x"}}</tool_call> heat it\n</tool_response><|im_end|>\n<|im_start|>assistant\n')
ACT = '<tool_call>\n{"name": "act", "arguments": {"command": "go to microwave 1"}}\n</tool_call><|im_end|>'


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from skillos.training.tiny_model import build

    return AutoTokenizer.from_pretrained(build())


def _encode(tokenizer, *parts):
    """Token ids of the parts in order, and each part's [start, end) token range."""
    ids, ranges = [], []
    for part in parts:
        part_ids = tokenizer(part, add_special_tokens=False)["input_ids"]
        ranges.append((len(ids), len(ids) + len(part_ids)))
        ids += part_ids
    return ids, ranges


def test_token_bytes_reassemble_the_text_exactly(tokenizer):
    text = REASON + "\n" + READ + RESULT + ACT + " café"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    pieces = credit.token_bytes(tokenizer, ids)
    assert len(pieces) == len(ids) and b"".join(pieces) == text.encode()


def test_spans_cover_the_reasoning_block_and_the_read_call_and_nothing_else(tokenizer):
    ids, (r_reason, r_nl, r_read, r_result, r_act) = _encode(tokenizer, REASON, "\n", READ, RESULT, ACT)
    pieces = credit.token_bytes(tokenizer, ids)
    assert r_reason[1] - r_reason[0] > 10  # the tag is split over many tokens of this vocabulary
    spans = credit.selection_spans(pieces[:r_result[0]])
    assert spans == [(r_reason[0], r_reason[1], "reasoning"), (r_read[0], r_read[1], "read")]
    assert tokenizer.decode(ids[r_read[0]:r_read[1]]) == READ
    tool_mask = [1] * len(ids)
    for i in range(*r_result):
        tool_mask[i] = 0
    mask = credit.selection_mask(pieces, tool_mask)
    expected = [1 if (r_reason[0] <= i < r_reason[1] or r_read[0] <= i < r_read[1]) else 0 for i in range(len(ids))]
    assert mask == expected
    assert sum(mask[i] for i in range(*r_result)) == 0  # the look-alike in the tool result
    assert sum(mask[i] for i in range(*r_act)) == 0  # an action call is task, not selection
    without_tool_mask = credit.selection_mask(pieces)
    assert sum(without_tool_mask[i] for i in range(*r_result)) > 0  # why the tool mask is applied


def test_reads_are_located_with_their_names_and_token_spans(tokenizer):
    second = READ.replace("heat-then-place", "cool-then-place")
    ids, (_, r1, _, r2) = _encode(tokenizer, REASON, READ, "\n", second)
    reads = credit.locate_reads(credit.token_bytes(tokenizer, ids))
    assert reads == [{"name": "heat-then-place", "token_start": r1[0], "token_end": r1[1]},
                     {"name": "cool-then-place", "token_start": r2[0], "token_end": r2[1]}]
    garbled = tokenizer('<tool_call>{"name": "read_skill", "argu</tool_call>', add_special_tokens=False)["input_ids"]
    assert credit.locate_reads(credit.token_bytes(tokenizer, garbled))[0]["name"] is None


def test_utilities_clean_oracle_against_first_oracle():
    u = credit.selection_utility
    assert u(["heat"], "heat", "clean-oracle") == 1.0
    assert u(["cool", "heat"], "heat", "clean-oracle") == 0.0  # two reads: not clean
    assert u(["cool", "heat"], "heat", "first-oracle") == 1.0  # the ablation credits it
    assert u([], "heat", "clean-oracle") == 0.0 and u([], "heat", "first-oracle") == 0.0
    assert u(None, "heat", "clean-oracle") is None and u(["heat"], None, "first-oracle") is None
    with pytest.raises(ValueError):
        u(["heat"], "heat", "task-mask-only")


def test_clean_oracle_counts_only_reads_of_skills_on_the_slate():
    u = credit.selection_utility
    slate = ["heat", "cool", "notes"]
    # a garbled name is no read of a skill: the trajectory read exactly one skill, the oracle
    assert u(["heat-then-plac", "heat"], "heat", "clean-oracle", slate) == 1.0
    assert u(["heat-then-plac", "heat"], "heat", "clean-oracle") == 0.0  # what counting every name gave
    assert u(["heat", "heat"], "heat", "clean-oracle", slate) == 1.0  # one skill, read twice
    assert u(["nothing-real"], "heat", "clean-oracle", slate) == 0.0  # no skill read at all
    assert u(["cool", "heat"], "heat", "clean-oracle", slate) == 0.0
    from skillos.evals.envs.slate import clean_oracle

    assert clean_oracle([None, "oracle"]) and not clean_oracle([None]) and not clean_oracle(["oracle", "misleading"])


def test_first_oracle_credits_the_first_oracle_reads_span_only(tokenizer):
    cool = READ.replace("heat-then-place", "cool-then-place")
    ids, (r_reason, _, r_cool, _, r_heat, _, r_again) = _encode(tokenizer, REASON, "\n", cool, "\n", READ, "\n", READ)
    pieces = credit.token_bytes(tokenizer, ids)
    first = credit.credit_mask(pieces, None, "first-oracle", "heat-then-place")
    assert [i for i, m in enumerate(first) if m] == list(range(*r_heat))  # not the reasoning, not cool, not the 2nd
    method = credit.credit_mask(pieces, None, "clean-oracle", "heat-then-place")
    assert method == credit.selection_mask(pieces)  # the method credits every selection span
    assert sum(credit.credit_mask(pieces, None, "first-oracle", "look-then-place")) == 0  # never read: nothing
    # the advantage: the first oracle read gets coef x selector; the other spans get neither stream
    sel = torch.tensor([credit.selection_mask(pieces)])
    loss = torch.ones_like(sel)
    adv = credit.token_advantages(torch.tensor([1.0]), torch.tensor([0.5]), sel, loss, "first-oracle", 2.0,
                                  torch.tensor([first]))[0]
    assert all(adv[i] == 1.0 for i in range(*r_heat))
    assert all(adv[i] == 0.0 for i in [*range(*r_reason), *range(*r_cool), *range(*r_again)])
    assert all(adv[i] == 1.0 for i in range(len(ids)) if not sel[0, i])  # task tokens: the outcome


def test_group_advantages_by_hand():
    nan = float("nan")
    values = torch.tensor([1.0, 0.0, 0.0, 0.0, nan, nan, 1.0, nan, 0.0])
    adv = credit.group_advantages(values, 3)
    # group 1: mean 1/3, unbiased std sqrt(1/3); group 2 (nobody read the oracle): all 0;
    # group 3: measured {1, 0}: mean 0.5, std sqrt(0.5), the unmeasured member exactly 0.
    s1, s3 = math.sqrt(1 / 3), math.sqrt(0.5)
    expected = torch.tensor([(2 / 3) / (s1 + 1e-4), (-1 / 3) / (s1 + 1e-4), (-1 / 3) / (s1 + 1e-4),
                             0.0, 0.0, 0.0, 0.5 / (s3 + 1e-4), 0.0, -0.5 / (s3 + 1e-4)])
    assert torch.allclose(adv, expected, atol=1e-6)
    unscaled = credit.group_advantages(values, 3, scale=False)
    assert torch.allclose(unscaled, torch.tensor([2 / 3, -1 / 3, -1 / 3, 0, 0, 0, 0.5, 0, -0.5]), atol=1e-6)


def test_all_unmeasured_groups_get_exactly_zero():
    adv = credit.group_advantages(torch.full((4,), float("nan")), 2)
    assert torch.equal(adv, torch.zeros(4)) and not torch.isnan(adv).any()


def test_token_advantages_by_hand_for_each_variant():
    outcome = torch.tensor([1.0, -1.0])
    selector = torch.tensor([0.5, -0.5])
    sel = torch.tensor([[1, 1, 0, 0, 0, 0], [0, 1, 1, 0, 0, 0]])
    # row 0: token 2-3 a tool result (0), token 5 padding; row 1: token 2 a tool result inside a span
    loss = torch.tensor([[1, 1, 0, 0, 1, 0], [1, 1, 0, 1, 1, 1]])
    method = credit.token_advantages(outcome, selector, sel, loss, "clean-oracle", 2.0)
    assert torch.equal(method, torch.tensor([[1.0, 1.0, 0, 0, 1.0, 0], [-1.0, -1.0, 0, -1.0, -1.0, -1.0]]))
    # (row 0: spans get 2 * 0.5 = 1.0; row 1: token 1 gets 2 * -0.5 = -1.0, the tool token stays 0)
    method = credit.token_advantages(outcome, selector, sel, loss, "clean-oracle", 0.5)
    assert torch.equal(method, torch.tensor([[0.25, 0.25, 0, 0, 1.0, 0], [-1.0, -0.25, 0, -1.0, -1.0, -1.0]]))
    control = credit.token_advantages(outcome, selector, sel, loss, "task-mask-only", 2.0)
    assert torch.equal(control, torch.tensor([[0.0, 0, 0, 0, 1.0, 0], [-1.0, 0, 0, -1.0, -1.0, -1.0]]))
    off = credit.token_advantages(outcome, selector, sel, loss, "off", 2.0)
    assert torch.equal(off, outcome.unsqueeze(1) * loss.float())
