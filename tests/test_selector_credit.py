"""SkillGate's credit arithmetic and span masks, on real token ids of the tiny model's tokenizer
and against tensors computed by hand: every profile (no_skill, mixed_task_reward,
mixed_separated, hybrid_slate, task-mask-only, first-oracle, clean-oracle)."""

import math

import pytest
import torch

from skillos.training.selector import credit as credit

REASON = "<skill_reasoning>The task heats an apple: heat-then-place fits.</skill_reasoning>"
READ = '<tool_call>\n{"name": "read_skill", "arguments": {"name": "heat-then-place"}}\n</tool_call>'
# A tool result that itself looks like a read call: it is the environment's text, never credit.
RESULT = ('<|im_end|>\n<|im_start|>user\n<tool_response>\n<tool_call>{"name": "read_skill", '
          '"arguments": {"name": "x"}}</tool_call> heat it\n</tool_response><|im_end|>\n<|im_start|>assistant\n')
ACT = '<tool_call>\n{"name": "act", "arguments": {"command": "go to microwave 1"}}\n</tool_call><|im_end|>'


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from skillos.evals.backends.tiny_model import build

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
    assert u(["cool", "heat"], "heat", "mixed_separated") == 0.0  # its behaviour utility is clean-oracle's
    assert u(["heat"], "heat", "mixed_separated") == 1.0
    assert u(["heat"], "heat", "hybrid_slate") == 1.0  # its stratified term's utility is clean-oracle's too
    for none in ("task-mask-only", "mixed_task_reward"):
        with pytest.raises(ValueError):
            u(["heat"], "heat", none)


def test_clean_oracle_counts_only_reads_of_skills_on_the_slate():
    u = credit.selection_utility
    slate = ["heat", "cool", "notes"]
    # a garbled name is no read of a skill: the trajectory read exactly one skill, the oracle
    assert u(["heat-then-plac", "heat"], "heat", "clean-oracle", slate) == 1.0
    assert u(["heat-then-plac", "heat"], "heat", "clean-oracle") == 0.0  # what counting every name gave
    assert u(["heat", "heat"], "heat", "clean-oracle", slate) == 0.0  # the oracle read twice: two reads
    assert u(["heat"], "heat", "clean-oracle", ["cool", "notes"]) is None  # a slate shown without its oracle
    assert u(["nothing-real"], "heat", "clean-oracle", slate) == 0.0  # no skill read at all
    assert u(["cool", "heat"], "heat", "clean-oracle", slate) == 0.0
    from skillos.evals.envs.slate.slates import clean_oracle

    assert clean_oracle([None, "oracle"]) and not clean_oracle([None]) and not clean_oracle(["oracle", "misleading"])
    assert not clean_oracle(["oracle", "oracle"]) and not clean_oracle(["oracle", None, "oracle"])


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
    for outcome_only in ("mixed_task_reward", "no_skill"):  # TRL's advantage on every written token
        off = credit.token_advantages(outcome, selector, sel, loss, outcome_only, 2.0)
        assert torch.equal(off, torch.tensor([[1.0, 1.0, 0, 0, 1.0, 0], [-1.0, -1.0, 0, -1.0, -1.0, -1.0]]))
    # the separated profiles land their own selector advantage on the spans exactly as the method
    for separated in ("mixed_separated", "hybrid_slate"):
        got = credit.token_advantages(outcome, selector, sel, loss, separated, 0.5)
        assert torch.equal(got, torch.tensor([[0.25, 0.25, 0, 0, 1.0, 0], [-1.0, -0.25, 0, -1.0, -1.0, -1.0]]))
    with pytest.raises(ValueError):
        credit.token_advantages(outcome, selector, sel, loss, "off", 2.0)  # the config maps the old name


def test_the_profiles_are_the_config_schemas():
    from skillos import config

    assert credit.VARIANTS == config.SELECTOR_CREDITS
    assert set(credit.OUTCOME_ONLY) | set(credit.CREDITED) | {"task-mask-only"} == set(credit.VARIANTS)
    assert config.SkillGateConfig(selector_credit="off").selector_credit == "mixed_task_reward"
    assert config.SkillGateConfig(selector_credit=False).selector_credit == "mixed_task_reward"  # YAML's bare off


def test_mixed_separated_stratifies_the_behaviour_advantage_by_outcome_by_hand():
    nan = float("nan")
    # utility (clean-oracle read) and outcome (won) of 3 groups of 4
    values = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    outcomes = torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, nan, 1.0])
    adv = credit.stratified_advantages(values, outcomes, 4)
    # group 1: each outcome stratum {1, 0}: mean 0.5, unbiased std sqrt(0.5)
    # group 2: the winner is alone in its stratum (0); the losers all read nothing: mean 0, std 0 -> 0
    # group 3: member 2 unmeasured (0); the winners {1, 0, 1}: mean 2/3, std sqrt(1/3)
    h, t = 0.5 / (math.sqrt(0.5) + 1e-4), math.sqrt(1 / 3) + 1e-4
    expected = torch.tensor([h, -h, h, -h, 0.0, 0.0, 0.0, 0.0, (1 / 3) / t, (-2 / 3) / t, 0.0, (1 / 3) / t])
    assert torch.allclose(adv, expected, atol=1e-6)
    unscaled = credit.stratified_advantages(values, outcomes, 4, scale=False)
    assert torch.allclose(unscaled, torch.tensor([0.5, -0.5, 0.5, -0.5, 0, 0, 0, 0, 1 / 3, -2 / 3, 0, 1 / 3]), atol=1e-6)
    # against the method's group normalisation: group 2's losers are not pushed down for the
    # winner's read, because the outcome already told them apart
    method = credit.group_advantages(values, 4, scale=False)
    assert torch.allclose(method[4:8], torch.tensor([0.75, -0.25, -0.25, -0.25]))
    assert torch.equal(credit.stratified_advantages(torch.full((4,), nan), torch.ones(4), 4), torch.zeros(4))


def test_hybrid_slate_pairs_twins_and_credits_the_paired_regret_by_hand():
    records = [{"with_oracle": True, "game_id": "a"}, {"with_oracle": False, "game_id": "a"},
               {"with_oracle": True, "game_id": "a"}, {"with_oracle": False, "game_id": "a"},
               {"with_oracle": True, "game_id": "b"}, {"with_oracle": False, "game_id": "c"},  # other games
               {"with_oracle": False, "game_id": "d"}, {"with_oracle": True, "game_id": "d"}]  # twin first
    twins = credit.pair_twins(records)
    assert twins == [1, None, 3, None, None, None, None, None]
    outcomes = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0])
    # pair (0, 1): with the oracle it won, without it lost: +1; pair (2, 3): -1; the rest 0
    assert torch.equal(credit.paired_regret(outcomes, twins), torch.tensor([1.0, 0, -1.0, 0, 0, 0, 0, 0]))
    outcomes[3] = float("nan")  # an unmeasured twin: no regret
    assert torch.equal(credit.paired_regret(outcomes, twins), torch.tensor([1.0, 0, 0, 0, 0, 0, 0, 0]))


def test_selector_advantages_dispatch_each_profile_by_hand():
    u = torch.tensor([1.0, 0.0, 0.0, 0.0])  # utilities of one group
    o = torch.tensor([1.0, 0.0, 1.0, 0.0])  # outcomes
    twins = [1, None, 3, None]
    s = math.sqrt(1 / 4) + 1e-4  # the group's unbiased std of {1, 0, 0, 0} is 0.5
    assert torch.allclose(credit.selector_advantages("clean-oracle", u, o, 4),
                          torch.tensor([0.75, -0.25, -0.25, -0.25]) / s)
    assert torch.allclose(credit.selector_advantages("first-oracle", u, o, 4),
                          torch.tensor([0.75, -0.25, -0.25, -0.25]) / s)
    # strata: won {0, 2} with utilities {1, 0}; lost {1, 3} with {0, 0}
    h = 0.5 / (math.sqrt(0.5) + 1e-4)
    assert torch.allclose(credit.selector_advantages("mixed_separated", u, o, 4), torch.tensor([h, 0.0, -h, 0.0]))
    # hybrid_slate: the twins (1, 3) were shown no oracle, so their utility is unmeasured; the
    # members with it (0, 2) both won, utilities {1, 0}: stratified term +-0.5 / (sqrt(0.5) + EPS),
    # plus each one's paired regret 1 - 0
    hybrid_u = torch.tensor([1.0, float("nan"), 0.0, float("nan")])
    assert torch.allclose(credit.selector_advantages("hybrid_slate", hybrid_u, o, 4, twins),
                          torch.tensor([1.0 + h, 0.0, 1.0 - h, 0.0]))
    assert torch.allclose(credit.selector_advantages("hybrid_slate", hybrid_u, o, 4),  # no pairs: the term alone
                          torch.tensor([h, 0.0, -h, 0.0]))
    for none in ("no_skill", "mixed_task_reward", "task-mask-only"):
        assert torch.equal(credit.selector_advantages(none, u, o, 4), torch.zeros(4))


def test_the_turn_after_the_last_tool_iteration_gets_no_credit_and_no_loss(tokenizer, monkeypatch, tmp_path):
    """TRL generates a turn after the last tool iteration's answer and executes no call in it: a
    read written there read nothing, so the selector trainer leaves that turn out of the loss and of
    every credit span, logs only the executed reads' spans and counts what it left out; a rollout
    whose answers do not fill every iteration is kept as generated."""
    import json
    from collections import defaultdict
    from types import SimpleNamespace

    from skillos.training.selector import grpo

    _, trainer_cls = grpo.selector_classes()
    trailing = REASON + READ.replace("heat-then-place", "cool-then-place")
    ids, (_, r_read, r_result, r_trailing) = _encode(tokenizer, REASON, READ, RESULT, trailing)
    tool = [0 if r_result[0] <= i < r_result[1] else 1 for i in range(len(ids))]
    slate = ["heat-then-place", "cool-then-place"]
    records = [{"success": 0.0, "reads": ["heat-then-place"], "oracle": "heat-then-place", "slate": slate},
               {"success": 0.0, "reads": ["cool-then-place"], "oracle": "heat-then-place", "slate": slate}]

    def run(cap):
        out = {"completion_ids": torch.tensor([ids, ids]), "completion_mask": torch.ones(2, len(ids), dtype=torch.long),
               "tool_mask": torch.tensor([tool, tool]), "advantages": torch.zeros(2)}
        monkeypatch.setattr(trainer_cls.__mro__[1], "_generate_and_score_completions", lambda self, inputs: out)
        monkeypatch.setattr(grpo, "SLATE", SimpleNamespace(episode_record=lambda env: env))
        log = tmp_path / f"selection-{cap}.jsonl"
        trainer = trainer_cls.__new__(trainer_cls)
        trainer.args = SimpleNamespace(selector_credit="clean-oracle", selector_coef=1.0, seed=0,
                                       max_tool_calling_iterations=cap, selection_log=str(log))
        trainer.processing_class, trainer.environments, trainer.num_generations = tokenizer, records, 2
        trainer.accelerator = SimpleNamespace(gather=lambda x: x, process_index=0, is_main_process=True)
        trainer._metrics, trainer.model = {"train": defaultdict(list)}, SimpleNamespace(training=True)
        trainer.state = SimpleNamespace(global_step=0)
        advantages = trainer._generate_and_score_completions([])["advantages"]
        return advantages, [json.loads(x) for x in log.read_text().splitlines()], trainer._metrics["train"]

    advantages, rows, metrics = run(cap=1)
    assert advantages[0, r_read[0]:r_read[1]].min() > 0 > advantages[1, r_read[0]:r_read[1]].max()  # the executed read
    assert advantages[:, r_trailing[0]:].abs().sum() == 0  # the read after the last iteration: no credit
    assert [len(r["read_spans"]) for r in rows] == [1, 1]
    assert [r["left_out_tokens"] for r in rows] == [r_trailing[1] - r_trailing[0]] * 2
    assert metrics["selection/left_out_tokens"] == [2 * (r_trailing[1] - r_trailing[0])]
    advantages, rows, _ = run(cap=2)  # one answer of two iterations: the rollout stopped by itself, kept
    assert advantages[0, r_trailing[0]:].max() > 0 and [r["left_out_tokens"] for r in rows] == [0, 0]
