"""Token-local selector credit (SkillGate), as pure functions over token ids and tensors.

Two credit streams in one GRPO loss. Task (action) tokens get the ordinary group-normalised
outcome advantage. Selection spans — the `<skill_reasoning>` block and each `read_skill` tool
call — get a separate advantage from selection evidence within the rollout group:

* clean-oracle utility (the method): 1 when the trajectory makes exactly one read of a skill of
  the slate and it is the oracle (two reads of the oracle are two reads, not clean; a name not on
  the slate is no read of a skill: it is left out); unmeasured on a slate that does not show the
  oracle (a hybrid_slate twin), where no read could be clean;
* first-oracle utility (the ablation): 1 when the oracle is among the reads, whatever else;
* 0 otherwise; None (unmeasured) when the episode could not be measured.

The profiles (`skillgate.selector_credit`), as the method's authors compare them:

* `no_skill`: GRPO with no slate (the environment shows none); TRL's advantage untouched.
* `mixed_task_reward` (`off` before): the mixed slate, outcome reward only; TRL's advantage
  untouched (one scalar per completion, on every token, selection spans included).
* `task-mask-only`: the selection spans are masked out of the outcome advantage and get
  nothing (coefficient exactly 0): the control.
* `first-oracle`: coef x the group-normalised first-oracle utility on the span of the first read
  of the oracle only (a trajectory that never read it has no span to credit).
* `clean-oracle` (the method): coef x the group-normalised clean-oracle utility on every
  selection span.
* `mixed_separated`: the behaviour advantage, separated from the outcome and stratified by it:
  the clean-oracle utility minus the mean over the group's members *with the same outcome*
  (divided by that stratum's std + EPS), so a selection is credited only for what it did beyond
  what the outcome already rewards; a stratum of one measured member gets 0 (`stratified_advantages`).
* `hybrid_slate`: paired regret between slates with and without the oracle, plus the stratified
  behaviour advantage. Rollouts come in pairs on one task (the environment shows the slate to the
  even member, its twin without the oracle to the odd one); the member with the oracle gets the
  regret r(with) - r(without) on its selection spans (what choosing from a slate that holds the
  oracle earned over the same task without it), its twin gets 0 there; unmeasured or unpaired
  members get 0 (`paired_regret`). To that, mixed_separated's term: the clean-oracle utility
  stratified by outcome, over the members that were shown the oracle (a twin's utility is
  unmeasured, so it gets 0 and sits in no stratum).

In every profile but the two outcome-only ones the selection spans are out of the outcome
advantage. Spans never include tool-result tokens (TRL's tool_mask 0) or padding.

Spans are found on the bytes each token decodes to, so a tag split over several tokens, or a
token straddling a tag's edge, is still covered: a token is in a span when its bytes overlap it.
"""

from __future__ import annotations

import json
import re

READ_CALL = re.compile(rb"<tool_call>\s*\{\s*\"name\"\s*:\s*\"read_skill\".*?</tool_call>", re.DOTALL)
REASONING = re.compile(rb"<skill_reasoning>.*?</skill_reasoning>", re.DOTALL)
VARIANTS = ("no_skill", "mixed_task_reward", "mixed_separated", "hybrid_slate", "task-mask-only",
            "first-oracle", "clean-oracle")  # the config schema's SELECTOR_CREDITS, in its order
OUTCOME_ONLY = ("no_skill", "mixed_task_reward")  # TRL's advantage untouched
CREDITED = ("mixed_separated", "hybrid_slate", "first-oracle", "clean-oracle")  # coef x selector on spans
UTILITY = {"clean-oracle": "clean-oracle", "first-oracle": "first-oracle", "mixed_separated": "clean-oracle",
           "hybrid_slate": "clean-oracle"}
EPS = 1e-4  # TRL's std guard


def _byte_decoder() -> dict:
    """GPT-2 byte-level BPE's printable alphabet back to bytes (the inverse of bytes_to_unicode)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    codes, extra = list(printable), 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, codes)}


_BYTES = _byte_decoder()


def token_bytes(tokenizer, ids) -> list[bytes]:
    """The bytes each token id decodes to (byte-level tokenizers exactly; others via decode)."""
    out = []
    for token_id, piece in zip(ids, tokenizer.convert_ids_to_tokens(list(ids))):
        if piece in tokenizer.all_special_tokens or any(ch not in _BYTES for ch in piece):
            out.append(tokenizer.decode([token_id]).encode())
        else:
            out.append(bytes(_BYTES[ch] for ch in piece))
    return out


def _token_ranges(pieces: list[bytes]) -> list[tuple[int, int]]:
    ranges, at = [], 0
    for piece in pieces:
        ranges.append((at, at + len(piece)))
        at += len(piece)
    return ranges


def _spans(pieces: list[bytes], pattern) -> list[tuple[int, int, re.Match]]:
    """[start, end) token ranges of each match of `pattern` in the joined bytes."""
    ranges = _token_ranges(pieces)
    found = []
    for match in pattern.finditer(b"".join(pieces)):
        tokens = [i for i, (a, b) in enumerate(ranges) if a < match.end() and b > match.start()]
        if tokens:
            found.append((tokens[0], tokens[-1] + 1, match))
    return found


def selection_spans(pieces: list[bytes]) -> list[tuple[int, int, str]]:
    """Token ranges of the skill-reasoning blocks and read_skill calls, in order."""
    spans = [(a, b, "reasoning") for a, b, _ in _spans(pieces, REASONING)]
    spans += [(a, b, "read") for a, b, _ in _spans(pieces, READ_CALL)]
    return sorted(spans)


def locate_reads(pieces: list[bytes]) -> list[dict]:
    """Each read_skill call in the token stream: the name it asks for and its token span."""
    reads = []
    for start, end, match in _spans(pieces, READ_CALL):
        body = match.group(0)[len(b"<tool_call>"):-len(b"</tool_call>")]
        try:
            name = json.loads(body.decode(errors="replace"))["arguments"]["name"]
        except (ValueError, KeyError, TypeError):
            name = None  # a garbled call still spent selection tokens
        reads.append({"name": name, "token_start": start, "token_end": end})
    return reads


def selection_mask(pieces: list[bytes], tool_mask: list[int] | None = None) -> list[int]:
    """1 on selection-span tokens the model wrote; tool-result tokens (tool_mask 0) stay 0."""
    mask = [0] * len(pieces)
    for start, end, _ in selection_spans(pieces):
        for i in range(start, end):
            mask[i] = 1
    if tool_mask is not None:
        mask = [m * int(t) for m, t in zip(mask, tool_mask)]
    return mask


def selection_utility(reads: list[str] | None, oracle: str | None, variant: str,
                      on_slate=None) -> float | None:
    """The utility of one trajectory's reads; None when unmeasured (no record, no oracle, or a
    slate shown without its oracle). `on_slate`: the names the slate showed; a read of any other
    name is left out (clean-oracle counts only reads of skills on the slate)."""
    if reads is None or oracle is None or (on_slate is not None and oracle not in on_slate):
        return None
    if on_slate is not None:
        reads = [r for r in reads if r in set(on_slate)]
    kind = UTILITY.get(variant)
    if kind == "clean-oracle":
        return 1.0 if reads == [oracle] else 0.0
    if kind == "first-oracle":
        return 1.0 if oracle in reads else 0.0
    raise ValueError(f"selection_utility: variant {variant!r} has no utility")


def credit_mask(pieces: list[bytes], tool_mask: list[int] | None, variant: str, oracle: str | None) -> list[int]:
    """Where a trajectory's selector advantage lands: every selection span (clean-oracle), or the
    span of the first read of the oracle only (first-oracle: nothing when the oracle was never read)."""
    if variant != "first-oracle":
        return selection_mask(pieces, tool_mask)
    mask = [0] * len(pieces)
    first = next((r for r in locate_reads(pieces) if oracle is not None and r["name"] == oracle), None)
    if first is not None:
        for i in range(first["token_start"], first["token_end"]):
            mask[i] = 1
    if tool_mask is not None:
        mask = [m * int(t) for m, t in zip(mask, tool_mask)]
    return mask


def group_advantages(values, group_size: int, scale: bool = True):
    """Group-normalised advantages of a (B,) tensor with NaN for unmeasured: each value minus
    its group's mean over measured members (divided by their std + EPS when `scale`); an
    unmeasured member, and every member of an all-unmeasured group, gets exactly 0."""
    import torch

    grouped = values.view(-1, group_size)
    measured = ~torch.isnan(grouped)
    count = measured.sum(dim=1, keepdim=True)
    filled = torch.where(measured, grouped, torch.zeros_like(grouped))
    mean = filled.sum(dim=1, keepdim=True) / count.clamp(min=1)
    centred = torch.where(measured, grouped - mean, torch.zeros_like(grouped))
    if scale:
        var = (centred ** 2).sum(dim=1, keepdim=True) / (count - 1).clamp(min=1)
        centred = centred / (var.sqrt() + EPS)
    return centred.reshape(-1)


def stratified_advantages(values, outcomes, group_size: int, scale: bool = True):
    """mixed_separated's behaviour advantage: each value minus the mean over the measured members
    of its group with the same outcome (divided by that stratum's unbiased std + EPS when
    `scale`). values, outcomes: (B,) with NaN for unmeasured. An unmeasured member (either
    value), and every member of a stratum with one measured member, gets exactly 0."""
    import torch

    values, outcomes = values.view(-1, group_size), outcomes.view(-1, group_size)
    measured = ~torch.isnan(values) & ~torch.isnan(outcomes)
    same = (outcomes.unsqueeze(2) == outcomes.unsqueeze(1)) & measured.unsqueeze(1) & measured.unsqueeze(2)
    filled = torch.where(measured, values, torch.zeros_like(values))
    count = same.sum(dim=2)
    mean = (same * filled.unsqueeze(1)).sum(dim=2) / count.clamp(min=1)
    centred = torch.where(measured & (count > 1), filled - mean, torch.zeros_like(filled))
    if scale:
        sq = (same * (filled.unsqueeze(1) - mean.unsqueeze(2)) ** 2).sum(dim=2)
        centred = centred / ((sq / (count - 1).clamp(min=1)).sqrt() + EPS)
    return centred.reshape(-1)


def pair_twins(records: list[dict]) -> list[int | None]:
    """hybrid_slate's pairs, (2k, 2k+1) in the batch as the environments alternate: for a rollout
    with the oracle shown, the index of its twin (the next rollout, on the same game, without
    it); None for twins and for rollouts whose neighbour is not their twin."""
    twins: list[int | None] = [None] * len(records)
    for i in range(0, len(records) - 1, 2):
        a, b = records[i], records[i + 1]
        if a.get("with_oracle") and not b.get("with_oracle") and a.get("game_id") == b.get("game_id"):
            twins[i] = i + 1
    return twins


def paired_regret(outcomes, twins: list[int | None]):
    """hybrid_slate's selector advantage: for a rollout with the oracle and a twin without it,
    its outcome minus the twin's; 0 for twins, unpaired rollouts and any pair with an
    unmeasured member. outcomes: (B,) with NaN for unmeasured."""
    import torch

    out = torch.zeros_like(outcomes)
    for i, j in enumerate(twins):
        if j is not None and not torch.isnan(outcomes[i]) and not torch.isnan(outcomes[j]):
            out[i] = outcomes[i] - outcomes[j]
    return out


def selector_advantages(variant: str, utilities, outcomes, group_size: int, twins=None):
    """(B,) selector advantage of each rollout under `variant`: the group-normalised utility
    (clean-oracle, first-oracle), the outcome-stratified one (mixed_separated), that plus the
    paired regret (hybrid_slate, with `twins` from `pair_twins`; without them the regret is 0),
    or 0 (the outcome-only profiles and task-mask-only). utilities, outcomes: (B,) with NaN for
    unmeasured."""
    import torch

    if variant in ("clean-oracle", "first-oracle"):
        return group_advantages(utilities, group_size)
    if variant == "mixed_separated":
        return stratified_advantages(utilities, outcomes, group_size)
    if variant == "hybrid_slate":
        return stratified_advantages(utilities, outcomes, group_size) + paired_regret(
            outcomes, twins or [None] * len(outcomes))
    if variant not in VARIANTS:
        raise ValueError(f"selector_advantages: unknown variant {variant!r}")
    return torch.zeros_like(outcomes)


def token_advantages(outcome, selector, sel_mask, loss_mask, variant: str, coef: float, credit=None):
    """(B, T) per-token advantages. outcome, selector: (B,); sel_mask, loss_mask: (B, T) of 0/1
    (loss_mask: completion tokens the model wrote, i.e. completion_mask * tool_mask). `credit`
    (B, T): where the selector advantage lands (`credit_mask`; default every selection span)."""
    import torch

    loss_mask = loss_mask.to(outcome.dtype)
    if variant in OUTCOME_ONLY:
        return outcome.unsqueeze(1) * loss_mask
    sel = sel_mask.to(outcome.dtype) * loss_mask  # never a tool result or padding
    action = loss_mask - sel
    credited = sel if credit is None else credit.to(outcome.dtype) * sel
    coef = 0.0 if variant == "task-mask-only" else coef
    if variant not in VARIANTS:
        raise ValueError(f"token_advantages: unknown variant {variant!r}")
    return outcome.unsqueeze(1) * action + coef * selector.unsqueeze(1) * credited + torch.zeros_like(sel)
