"""The selector's GRPO pieces (SkillGate): `SelectorGRPOTrainer` and its arguments, the outcome
reward, the slate rows and environments TRL plays, and the tiny model's format warm-up; the
trainer (trainer.py) and the oracle-grpo start (sft.py) both build on them.

`SelectorGRPOTrainer` subclasses TRL's GRPOTrainer at one point: after
`_generate_and_score_completions` has computed the ordinary group-normalised outcome advantage
(one number per completion), it replaces it with per-token advantages, which TRL's `_compute_loss`
takes as they are, built by training/selector/credit.py.
"""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from skillos.config.schema import Config
from skillos.evals.envs.registry import environment
from skillos.training.common.grpo import destroyed, grpo_kwargs, loading
from skillos.training.selector import credit as credit
from skillos.training.common import trl_compat, turns
from skillos.training.common.prompt_cap import capped, config_class
from skillos.training.common.warmup import warm_up

SLATE = environment("slate")  # the slate's prompt, slates and metrics, through the environment protocol

SURFACE = "read_skill,act"  # the tool surface a selector checkpoint was trained on


WARMUP_STEPS = 360


def __getattr__(name: str):
    """`SelectorGRPOConfig` and `SelectorGRPOTrainer` are built on first use (PEP 562): trl and
    torch load only when training does, and pickle finds them here (training_args.bin)."""
    if name in ("SelectorGRPOConfig", "SelectorGRPOTrainer"):
        return dict(zip(("SelectorGRPOConfig", "SelectorGRPOTrainer"), selector_classes()))[name]
    raise AttributeError(name)


def trainer_class(cfg: Config):
    """The TRL trainer class a selector run builds (the gates' trace reads its arguments)."""
    return selector_classes()[1]


@functools.cache
def selector_classes():
    """(SelectorGRPOConfig, SelectorGRPOTrainer), built once on first call (trl loads only then)."""
    from trl import GRPOTrainer

    trl_compat.check_per_token(GRPOTrainer)  # the second credit stream hands the loss (B, T) advantages

    @dataclass
    class SelectorGRPOConfig(config_class()):
        """GRPOConfig (with skillos's max_prompt_length) plus the selector-credit knobs."""

        selector_credit: str = field(default="clean-oracle", metadata={
            "help": "no_skill | mixed_task_reward (outcome only) | mixed_separated | hybrid_slate | task-mask-only "
                    "(selection spans get no advantage) | first-oracle | clean-oracle"})
        selector_coef: float = field(default=1.0, metadata={
            "help": "Weight of the selector advantage on selection-span tokens."})
        selection_log: str | None = field(default=None, metadata={
            "help": "JSONL file for every rollout's reads with their token spans."})

        def __post_init__(self):
            super().__post_init__()
            if self.selector_credit not in credit.VARIANTS:
                raise ValueError(f"selector_credit {self.selector_credit!r} is not one of {credit.VARIANTS}")

    class SelectorGRPOTrainer(capped(GRPOTrainer)):
        """GRPO with a second, token-local credit stream on the selection spans."""

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            import torch

            args = self.args
            ids, completion_mask = out["completion_ids"], out["completion_mask"]
            tool_mask = out.get("tool_mask", torch.ones_like(completion_mask))
            # the turn TRL generates after the last tool iteration executes no call, so no read in it
            # happened: out of the loss and of every credit span (training/common/turns.py). A rollout
            # whose last answer TRL dropped for length has fewer runs and is kept as generated. TRL's loss
            # normaliser (num_items_in_batch, read by dapo-style loss types only) was counted before this.
            left_out = turns.leave_out_after_last_iteration(tool_mask, completion_mask, args.max_tool_calling_iterations)
            loss_mask = completion_mask * tool_mask
            variant = args.selector_credit
            rows, masks, credits, utilities, outcomes, records = [], [], [], [], [], []
            for b in range(ids.size(0)):
                pieces = credit.token_bytes(self.processing_class, ids[b].tolist())
                masks.append(credit.selection_mask(pieces, tool_mask[b].tolist()))
                record = SLATE.episode_record(self.environments[b]) if self.environments else {"success": None}
                records.append(record)
                credits.append(credit.credit_mask(pieces, tool_mask[b].tolist(), variant, record.get("oracle")))
                reads = record.get("reads") if record["success"] is not None else None
                utility = (credit.selection_utility(reads, record.get("oracle"), variant, record.get("slate"))
                           if variant in credit.UTILITY else None)
                utilities.append(float("nan") if utility is None else utility)
                outcomes.append(float("nan") if record["success"] is None else float(record["success"]))
                # reads the model wrote and made: none inside a tool answer, none after the last iteration
                located = [r for r in credit.locate_reads(pieces) if tool_mask[b, r["token_start"]]]
                rows.append({**record, "utility": utility, "completion_tokens": int(loss_mask[b].sum()),
                             "selection_tokens": int((torch.tensor(masks[-1]) * loss_mask[b].cpu()).sum()),
                             "read_spans": located, "left_out_tokens": left_out[b]})
            sel_mask = torch.tensor(masks, device=ids.device)
            if variant not in credit.OUTCOME_ONLY:
                signal = getattr(self, "signal", "real")
                if signal != "real":  # a canary's negative control: utilities and outcomes alike
                    blocks = [i // self.num_generations for i in range(len(utilities))]
                    key = f"{args.seed}|{self.state.global_step}"
                    utilities = destroyed(utilities, blocks, key, signal)
                    outcomes = destroyed(outcomes, blocks, key + "|outcome", signal)
                # Groups may span processes: normalise over the gathered batch, keep this process's rows.
                # hybrid_slate's pairs are neighbours in this process's batch: its regret is local.
                local = torch.tensor(utilities, device=ids.device)
                local_outcomes = torch.tensor(outcomes, device=ids.device)
                gathered = credit.selector_advantages(
                    variant, self.accelerator.gather(local), self.accelerator.gather(local_outcomes),
                    self.num_generations)
                start = self.accelerator.process_index * len(local)
                selector = gathered[start:start + len(local)]
                if variant == "hybrid_slate":
                    selector = selector + credit.paired_regret(local_outcomes, credit.pair_twins(records))
                for row, outcome, sel in zip(rows, out["advantages"].tolist(), selector.tolist()):
                    row.update(outcome_advantage=outcome, selector_advantage=sel)
                # the second stream's own learning signal (training/common/signal.py): with every outcome
                # alike GRPO's advantages are 0, yet selection spans still carry credit
                self._metrics["train" if self.model.training else "eval"]["selection/advantage_nonzero"].append(
                    sum(abs(v) > 0 for v in selector.tolist()) / max(len(rows), 1))
                out["advantages"] = credit.token_advantages(out["advantages"], selector, sel_mask, loss_mask,
                                                            variant, args.selector_coef,
                                                            torch.tensor(credits, device=ids.device))
            self._log_selection(rows)
            return out

        def _log_selection(self, rows: list[dict]) -> None:
            mode = "train" if self.model.training else "eval"
            total = sum(r["completion_tokens"] for r in rows)
            self._metrics[mode]["selection/token_share"].append(
                sum(r["selection_tokens"] for r in rows) / total if total else float("nan"))
            # tokens of the turn after the last tool iteration, left out of the loss (above)
            self._metrics[mode]["selection/left_out_tokens"].append(sum(r["left_out_tokens"] for r in rows))
            shown = [r for r in rows if r["success"] is not None and r.get("with_oracle", True)]  # no twin
            self._metrics[mode]["selection/oracle_read"].append(
                sum(r["oracle"] in r["reads"] for r in shown) / len(shown) if shown else float("nan"))
            if self.args.selection_log and self.accelerator.is_main_process:
                with open(self.args.selection_log, "a", encoding="utf-8") as fh:
                    for r in rows:
                        fh.write(json.dumps({"step": self.state.global_step, **r}) + "\n")

    for cls in (SelectorGRPOConfig, SelectorGRPOTrainer):
        cls.__module__, cls.__qualname__ = __name__, cls.__name__
    return SelectorGRPOConfig, SelectorGRPOTrainer


class SlateReward:
    """The outcome reward: 1 won, 0 lost, None unmeasured (TRL gives it no advantage). With
    `signal` "shuffled" or "flipped" (a canary's negative controls) the rewards are permuted
    within each group of `group` completions, or negated."""

    __name__ = "slate_outcome"

    def __init__(self, echo, signal: str, group: int, seed: int):
        self.echo, self.history, self.signal, self.group, self.seed = echo, [], signal, group, seed

    def __call__(self, prompts, completions, environments=None, **_) -> list:
        records = [SLATE.episode_record(env) for env in environments]
        metrics = SLATE.selection_metrics(records)
        self.echo(SLATE.render_metrics("rollouts", metrics))
        self.history.append(metrics)
        rewards = [None if r["success"] is None else float(r["success"]) for r in records]
        blocks = [i // self.group for i in range(len(rewards))]
        return destroyed(rewards, blocks, f"{self.seed}|{len(self.history)}", self.signal)


def instructions(cfg: Config) -> str:
    """What the first user turn opens with: the slate's instructions, or no_skill's."""
    return SLATE.NO_SKILL_INSTRUCTIONS if cfg.skillgate.selector_credit == "no_skill" else SLATE.SLATE_INSTRUCTIONS


class TaskLastSlateEnv(SLATE.SlateEnv):
    """A SlateEnv whose first input repeats the task sentence as its last line, after the admissible
    actions (the selector canary's miniature, training/selector/canary.py). The protocol's order
    (slate, scene, actions) puts 100-380 tokens of actions after the task; a random-init model
    attending to its last 128 tokens cannot see it there, and attending to everything it learned
    no reading in 2,400 supervised steps (tuning split, measured). Its tools are SlateEnv's."""

    def reset(self, **row) -> str:
        return task_last(super().reset(**row))


def task_last(text: str) -> str:
    """`text` with its "Your task is to: ..." line repeated at its end (unchanged if it has none)."""
    line = next((x.strip() for x in text.splitlines() if x.startswith(TASK_LINE)), None)
    return f"{text}\n\n{line}" if line else text


TASK_LINE = "Your task is to:"  # how every household observation states its task


def environment_factory(setup, env_class=None):
    """TRL's environment_factory: SlateEnvs (or `env_class`, e.g. TaskLastSlateEnv) numbered from 0
    in the order TRL makes them, so pool instance k (rollout k of every batch) alternates
    hybrid_slate's slate and its twin whatever environments were made before (the SFT start's,
    the dry-run's)."""
    import dataclasses
    import itertools

    return partial(env_class or SLATE.SlateEnv, dataclasses.replace(setup, slots=itertools.count()))


def dataset_rows(cfg: Config, games) -> list[dict]:
    """One row per slate task: the games as given, or with `training.curriculum` interleaved their
    task types taking turns (unshuffled: a step of as many prompts as there are types holds one of
    each, so its update moves each type's choice beside the other's, not the choice for both)."""
    prompt = [{"role": "system", "content": SLATE.SYSTEM},
              {"role": "user", "content": instructions(cfg) + "\n\n"}]
    ordered = interleaved(games) if cfg.training.curriculum == "interleaved" else games
    return [{"prompt": prompt, "game_id": g.id} for g in ordered]


def interleaved(games) -> list:
    """The games, task types taking turns in sorted order (cool, heat, cool, ...), each type's in
    the order given, until every type's run out."""
    by_type = {}
    for game in games:
        by_type.setdefault(game.task_type, []).append(game)
    rounds = itertools.zip_longest(*(by_type[t] for t in sorted(by_type)))
    return [game for one in rounds for game in one if game is not None]


def selector_kwargs(cfg: Config, cpu: bool, out: Path) -> dict:
    g = cfg.skillgate
    kwargs = grpo_kwargs(cfg, cpu)
    if cfg.training.curriculum != "interleaved":  # the one order a slate run plays (its trace says so)
        kwargs.pop("shuffle_dataset", None)
    kwargs.update(max_tool_calling_iterations=g.max_tool_calls, selector_credit=g.selector_credit,
                  selector_coef=g.selector_coef, selection_log=str(out / "selection.jsonl"))
    return kwargs


def args_spec(cfg: Config, cpu: bool, out: Path) -> tuple:
    return selector_classes()[0], selector_kwargs(cfg, cpu, out)


def build_args(cfg: Config, cpu: bool, out: Path, extra: dict | None = None, model: str | None = None):
    """The selector trainer's arguments (what `skillos gate check --trace` reads; `model`: the folder
    the trainer loads, where it is known)."""
    cls, kwargs = args_spec(cfg, cpu, out)
    return cls(**loading({**kwargs, **(extra or {})}, model))


def warmup_conversations(setup, rows: list[dict]) -> list[list[dict]]:
    """Format warm-up for the tiny model: a reasoning block and one read_skill call, half on the
    oracle and half on a misleading skill, so a group starts with reads of both kinds."""
    conversations = []
    for i, row in enumerate(rows):
        env = SLATE.SlateEnv(setup)
        text = env.reset(**{k: v for k, v in row.items() if k != "prompt"})
        slate = setup.slates[row["game_id"]]
        pick = slate.oracle if i % 2 == 0 or not slate.misleading else slate.misleading[0]
        call = {"name": SLATE.READ_TOOL, "arguments": {"name": pick}}
        conversations.append(row["prompt"][:-1] + [
            {"role": "user", "content": row["prompt"][-1]["content"] + text},
            {"role": "assistant", "content": f"<skill_reasoning>{pick} fits the task.</skill_reasoning>",
             "tool_calls": [{"id": f"call_{i}", "type": "function", "function": call}]}])
    return conversations


def warm(model: str, out: Path, setup, rows, echo) -> str:
    """The tiny model's format warm-up on the first training slates (reused when it is there)."""
    target = out / "warmup"
    if not (target / "config.json").is_file():
        echo(f"warm-up: {WARMUP_STEPS} supervised steps on well-formed read_skill calls")
        warm_up(model, warmup_conversations(setup, rows[:6]), SLATE.tool_schemas(), target, steps=WARMUP_STEPS, decay=True)
    return str(target.resolve())
