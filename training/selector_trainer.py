"""SkillGate's selector-credit GRPO: the executor (the model being trained) plays a task with
a skill slate (`SlateEnv`: `read_skill`, `act`) and learns which skill to read.

`SelectorGRPOTrainer` subclasses TRL's GRPOTrainer at one point: after
`_generate_and_score_completions` has computed the ordinary group-normalised outcome advantage
(one number per completion), it replaces it with per-token advantages — TRL's `_compute_loss`
takes a (B, T) advantage as it is — built by training/selector_credit.py: the outcome advantage
on action tokens, `selector_coef` x the profile's selector advantage on the selection spans
(training/selector_credit.py says what each profile computes). The outcome-only profiles
(`no_skill`, `mixed_task_reward`) leave TRL's advantage untouched. Every read is logged with its
token span to OUTPUT_DIR/selection.jsonl. `skillgate.init` says where GRPO starts: the base
model, or an SFT on a teacher's selection turns or on the gold reads (training/selector_sft.py).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from skillos.config.schema import Config
from skillos.training import selector_credit as credit
from skillos.evals.backends.tool_format import for_training
from skillos.evals.envs.registry import environment

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

    from skillos.training import trl_compat
    from skillos.training.prompt_cap import capped, config_class

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
                located = credit.locate_reads(pieces)
                rows.append({**record, "utility": utility, "completion_tokens": int(loss_mask[b].sum()),
                             "selection_tokens": int((torch.tensor(masks[-1]) * loss_mask[b].cpu()).sum()),
                             "read_spans": located})
            sel_mask = torch.tensor(masks, device=ids.device)
            if variant not in credit.OUTCOME_ONLY:
                signal = getattr(self, "signal", "real")
                if signal != "real":  # a canary's negative control: utilities and outcomes alike
                    from skillos.training.trainer import destroyed

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
                # the second stream's own learning signal (training/signal.py): with every outcome
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
        from skillos.training.trainer import destroyed

        blocks = [i // self.group for i in range(len(rewards))]
        return destroyed(rewards, blocks, f"{self.seed}|{len(self.history)}", self.signal)


def instructions(cfg: Config) -> str:
    """What the first user turn opens with: the slate's instructions, or no_skill's."""
    return SLATE.NO_SKILL_INSTRUCTIONS if cfg.skillgate.selector_credit == "no_skill" else SLATE.SLATE_INSTRUCTIONS


def environment_factory(setup):
    """TRL's environment_factory: SlateEnvs numbered from 0 in the order TRL makes them, so pool
    instance k (rollout k of every batch) alternates hybrid_slate's slate and its twin whatever
    environments were made before (the SFT start's, the dry-run's)."""
    import dataclasses
    import itertools

    return partial(SLATE.SlateEnv, dataclasses.replace(setup, slots=itertools.count()))


def dataset_rows(cfg: Config, games) -> list[dict]:
    prompt = [{"role": "system", "content": SLATE.SYSTEM},
              {"role": "user", "content": instructions(cfg) + "\n\n"}]
    return [{"prompt": prompt, "game_id": g.id} for g in games]


def selector_kwargs(cfg: Config, cpu: bool, out: Path) -> dict:
    from skillos.training.trainer import grpo_kwargs

    g = cfg.skillgate
    kwargs = grpo_kwargs(cfg, cpu)
    kwargs.update(max_tool_calling_iterations=g.max_tool_calls, selector_credit=g.selector_credit,
                  selector_coef=g.selector_coef, selection_log=str(out / "selection.jsonl"))
    return kwargs


def args_spec(cfg: Config, cpu: bool, out: Path) -> tuple:
    return selector_classes()[0], selector_kwargs(cfg, cpu, out)


def build_args(cfg: Config, cpu: bool, out: Path, extra: dict | None = None):
    """The selector trainer's arguments (what `skillos gate check --trace` reads)."""
    cls, kwargs = args_spec(cfg, cpu, out)
    return cls(**{**kwargs, **(extra or {})})


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


def train(cfg: Config, ledger, echo=print, warmup: bool = True, signal: str = "real") -> dict:
    """Selector-credit GRPO for `cfg` (gates already passed); returns the run's summary.
    `signal` "shuffled" / "flipped": rewards and selection utilities permuted within each group,
    or negated: the learning canary's negative controls (training/canary)."""
    from skillos.training.trainer import guarded

    return guarded(cfg, echo, lambda out, cpu: _train(cfg, ledger, echo, warmup, out, cpu, signal))


def _train(cfg: Config, ledger, echo, warmup: bool, out: Path, cpu: bool, signal: str = "real") -> dict:
    from datasets import Dataset

    from skillos.evals.arms import load_games

    from skillos.ledger.experiments import record_experiment
    from skillos.evals.backends.tiny_model import TINY_NAME, resolve
    from skillos.training.trainer import archive_callback, archived, fit, is_main_process, lora_config

    games = load_games(cfg, cfg.env.train_split, cfg.env.n_train_games)
    setup = SLATE.make_slate_setup(cfg, games, out)
    echo(SLATE.render_audit(setup.listing_audit))
    rows = dataset_rows(cfg, games)
    model, init = resolve(cfg.training.model), None
    # The tiny CPU model cannot call a tool before its format warm-up; an SFT start teaches the call itself.
    if warmup and cfg.training.model == TINY_NAME and cfg.skillgate.init == "base":
        model = warm(model, out, setup, rows, echo)
    if cfg.skillgate.init != "base":  # the method's start (training/selector_sft.py)
        from skillos.training.selector_sft import start

        model, init = start(cfg, setup, [g.id for g in games], model, out, echo, cpu)
    if not is_main_process():
        ledger = None
    run_id = None
    if ledger is not None:
        run_id = ledger.start_run(record_experiment(ledger, cfg), "train", config=cfg.to_dict(),
                                  seed=cfg.training.seed)
    reward = SlateReward(echo, signal, cfg.training.num_generations or 1, cfg.training.seed or 0)
    try:
        trainer_cls = selector_classes()[1]
        trainer = trainer_cls(
            model=model, reward_funcs=[reward], args=build_args(cfg, cpu, out),
            train_dataset=Dataset.from_list(rows), peft_config=lora_config(cfg),
            processing_class=for_training(model),  # None: TRL's own; a template without tools: tool_format's
            environment_factory=environment_factory(setup),
            callbacks=[archive_callback(cfg, ledger, run_id, echo, surface=SURFACE)])
        trainer.signal = signal
    except BaseException as exc:
        if ledger is not None:
            ledger.end_experiment_run(run_id, "crashed", f"{type(exc).__name__}: {exc}"[:300])
        raise
    learned = fit(trainer, cfg, out, ledger, run_id, echo)

    return {"run_id": run_id, "output_dir": str(out), "checkpoints": archived(out), "steps": reward.history,
            "slate": str(out / "slate"), "slates": SLATE.composition(list(setup.slates.values())),
            "listing_audit": setup.listing_audit,
            "profile": cfg.skillgate.selector_credit, "init": init or {"init": "base", "model": model},
            "signal": learned}


def warm(model: str, out: Path, setup, rows, echo) -> str:
    """The tiny model's format warm-up on the first training slates (reused when it is there)."""
    from skillos.training.warmup import warm_up

    target = out / "warmup"
    if not (target / "config.json").is_file():
        echo(f"warm-up: {WARMUP_STEPS} supervised steps on well-formed read_skill calls")
        warm_up(model, warmup_conversations(setup, rows[:6]), SLATE.tool_schemas(), target, steps=WARMUP_STEPS, decay=True)
    return str(target.resolve())
