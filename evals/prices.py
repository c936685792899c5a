"""What a launch's paid API calls cost before it runs: the price table, and the estimate the plan,
`gate check` and the cost gate (gates/approval.py `api-cost`) read.

A role is paid when its backend bills per token (registry.Backend.paid: openai, anthropic) and its
endpoint is not a server on this machine. Its estimate is calls x (prompt + completion tokens per
call) x the model's price. A model the table does not list, with no price stated in its section
(`usd_per_mtok`), has an unknown cost, never 0; so does a role whose call count the config does
not fix. An unknown or over-budget cost (compute.max_cost_usd) needs an approved plan, as a GPU
launch does.

The prices are USD per million tokens (input, output), standard tier (no batch, no cache), as the
source named beside them listed them on the date named; a vendor changes them: state yours in the
section (`usd_per_mtok: [IN, OUT]`) where they differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from skillos import registry
from skillos.config.backend import decoding_of
from skillos.config.fields import lookup
from skillos.config.schema import PRICED_SECTIONS
from skillos.evals.arms import learns, plays

OPENAI_SOURCE = ("deploybase.ai/articles/openai-pricing, citing platform.openai.com pricing", "2026-03")
ANTHROPIC_SOURCE = ("docs.anthropic.com/en/docs/about-claude/pricing and deploybase.ai/articles/claude-api-pricing",
                    "2026-03-21")
# model name -> (input, output) USD per million tokens; a dated snapshot name (gpt-4o-mini-2024-07-18,
# claude-sonnet-4-20250514) is priced as the name it starts with
PRICES: dict[str, tuple[float, float, tuple[str, str]]] = {
    "gpt-4o": (2.50, 10.00, OPENAI_SOURCE), "gpt-4o-mini": (0.15, 0.60, OPENAI_SOURCE),
    "gpt-4.1": (2.00, 8.00, OPENAI_SOURCE), "gpt-4.1-mini": (0.40, 1.60, OPENAI_SOURCE),
    "gpt-4.1-nano": (0.10, 0.40, OPENAI_SOURCE), "gpt-5": (1.25, 10.00, OPENAI_SOURCE),
    "gpt-5-mini": (0.25, 2.00, OPENAI_SOURCE), "gpt-5-nano": (0.05, 0.40, OPENAI_SOURCE),
    "o3": (2.00, 8.00, OPENAI_SOURCE), "o3-mini": (1.10, 4.40, OPENAI_SOURCE), "o4-mini": (1.10, 4.40, OPENAI_SOURCE),
    "claude-opus-4-1": (15.00, 75.00, ANTHROPIC_SOURCE), "claude-opus-4": (15.00, 75.00, ANTHROPIC_SOURCE),
    "claude-sonnet-4": (3.00, 15.00, ANTHROPIC_SOURCE), "claude-sonnet-4-5": (3.00, 15.00, ANTHROPIC_SOURCE),
    "claude-3-7-sonnet": (3.00, 15.00, ANTHROPIC_SOURCE), "claude-3-5-haiku": (0.80, 4.00, ANTHROPIC_SOURCE),
    "claude-haiku-4-5": (1.00, 5.00, ANTHROPIC_SOURCE), "claude-3-haiku": (0.25, 1.25, ANTHROPIC_SOURCE),
}
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")


@dataclass
class Price:
    input: float | None  # USD per million prompt tokens; None: unknown
    output: float | None
    source: str  # where the number comes from, or why there is none

    @property
    def known(self) -> bool:
        return self.input is not None and self.output is not None


def paid(section) -> str | None:
    """Why this backend section bills per token (None: it does not: a local model, the heuristic,
    or an API-shaped server on this machine)."""
    entry = registry.BACKENDS.get(section.backend)
    if entry is None or not entry.paid:
        return None
    host = urlparse(section.base_url).hostname if section.base_url else None
    if host is not None and (host in LOCAL_HOSTS or host.startswith("127.")) and not _listed(section.model):
        return None  # a server of your own (transformers serve, vllm serve): no bill per token
    return f"{section.backend} at {section.base_url or 'its vendor'}"


def price(section) -> Price:
    """The section's price: stated in it (usd_per_mtok), else the table's, else unknown."""
    stated = getattr(section, "usd_per_mtok", None)
    if stated is not None:
        return Price(float(stated[0]), float(stated[1]), "stated in the config (usd_per_mtok)")
    found = _listed(section.model)
    if found is None:
        return Price(None, None, f"model {section.model!r} is not in the price table (evals/prices.py): "
                                 "state usd_per_mtok: [IN, OUT] in its section")
    name, (cost_in, cost_out, (source, date)) = found
    return Price(cost_in, cost_out, f"{name} as listed by {source}, {date}")


def _listed(model: str | None):
    """(name, row) of the longest table name the model is or starts with (a dated snapshot)."""
    if not model:
        return None
    base = model.rsplit("/", 1)[-1].lower()  # openrouter-style vendor/model
    names = [n for n in PRICES if base == n or base.startswith(n + "-")]
    if not names:
        return None
    name = max(names, key=len)
    return name, PRICES[name]


def estimate(cfg, runs: int = 1, step_calls: int | None = None) -> dict:
    """The cost of the config's paid API calls over its `runs` (a matrix x seeds): per paid
    section its price, calls, tokens per call and USD (None + reason where unknown), the total
    (None when any part is unknown, never 0), and whether it is within compute.max_cost_usd.
    `step_calls`: a training launch's executor calls a step (training/common/plan.step_plan, which the
    gates read: this module sits below training); None: unknown for training."""
    c, roles = cfg.compute, []
    for name in PRICED_SECTIONS:
        section = lookup(cfg, name)
        why = paid(section)
        if why is None:
            continue
        p = price(section)
        calls, basis = _calls(cfg, name, runs, step_calls)
        completion = section.max_tokens or c.completion_tokens_per_call
        usd = None
        # admissible decoding reads the prompt once per admissible action a step, a number known only in play
        scored = (f"{name}.decoding admissible reads the prompt once per admissible action, a number known only "
                  "in play") if decoding_of(section) == "admissible" else None
        if p.known and p.input == p.output == 0:  # free whatever the number of calls
            usd = 0.0
        elif p.known and calls is not None and not scored:
            usd = calls * (c.prompt_tokens_per_call * p.input + completion * p.output) / 1e6
        reason = None if usd is not None else "; ".join(r for r in (
            None if p.known else p.source, None if calls is not None else basis, scored) if r)
        roles.append({"section": name, "backend": section.backend, "model": section.model, "paid": why,
                      "usd_per_mtok": [p.input, p.output], "price_source": p.source, "calls": calls,
                      "calls_basis": basis, "prompt_tokens_per_call": c.prompt_tokens_per_call,
                      "completion_tokens_per_call": completion,
                      "completion_basis": f"{name}.max_tokens" if section.max_tokens else
                      "compute.completion_tokens_per_call (assumed)", "usd": usd, "reason": reason})
    known = all(r["usd"] is not None for r in roles)
    total = sum(r["usd"] for r in roles) if roles and known else (0.0 if not roles else None)
    return {"paid": bool(roles), "roles": roles, "usd": total, "max_cost_usd": c.max_cost_usd,
            "within_budget": None if total is None else total <= c.max_cost_usd,
            "basis": "an estimate: calls x (compute.prompt_tokens_per_call, assumed, + completion tokens) x price; "
                     "not a measured run",
            "reason": None if known else "; ".join(f"{r['section']}: {r['reason']}" for r in roles if r["usd"] is None)}


def _calls(cfg, section: str, runs: int, per_step: int | None) -> tuple[int | None, str]:
    """(calls, how counted) of one section over the launch; None where the config does not fix them."""
    n, steps = cfg.env.n_games, cfg.env.max_steps
    learning = [arm for arm in cfg.eval.arms if learns(arm)]
    if section == "executor":
        if cfg.training.is_set():
            total = (cfg.training.max_steps or 0) * runs
            if per_step is None or not total:
                return None, "the step plan does not fix the executor's calls (training.max_steps or rollouts unset)"
            return per_step * total, f"the step plan's {per_step} executor calls a step x {total} steps"
        k = cfg.eval.trials  # each held-out game played k times (arms.plays counts every play)
        games = plays(cfg) * runs
        held_out = "env.n_games x arms" if k == 1 else f"env.n_games x eval.trials {k} x arms"
        return games * steps, (f"at most one per step: {games} games ({held_out} + env.n_train_games x "
                               f"learning arms, x {runs} run(s)) x env.max_steps {steps}")
    if section == "curator" and not cfg.training.is_set():
        games = (cfg.env.n_train_games + n) * len(learning) * runs
        return games, (f"one per game a curating arm plays ({len(learning)} arm(s) x (env.n_train_games + "
                       f"env.n_games) x {runs} run(s)), assumed")
    return None, f"{section}'s calls are not fixed by the config"
