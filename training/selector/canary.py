"""The selector's learning canary: SkillGate GRPO with clean-oracle selector credit
(training/selector/grpo.py: the SelectorGRPOTrainer, its span masks and credit arithmetic,
SlateEnv) on a miniature the tiny CPU model can learn.

The miniature, and why. The executor being trained reads one skill from a slate of four on heat
and cool tasks (training/configs/slates/canary): the oracle, the other type's oracle (its
misleading skill: right for the other task), and two irrelevant skills drawn from six. Both oracle
names are on every slate and the order is seeded per game, so neither a name nor a position tells
the oracle without the task: the payoff table (printed before every run) shows each naming rule a
listing supports losing a type detectably, and the canary's strata (the types) must each improve.
It starts from a supervised warm-up that reads every slate member equally often, its reasoning
first saying the task's type (those words weighted as the rest of the turn), near a chance rate of
1/4 for the oracle: a warm start, not a teacher. The tiny model attends to its last 128 tokens
(canary.attention_window) and its first input repeats the task sentence as its last line
(TaskLastSlateEnv: the protocol's order puts the admissible actions after it, out of that reach),
so it can read the task; each read is one token (canary.call_tokens), a few after the type it said.
Each episode ends after the read (env.max_steps 1),
so the outcome reward is 0 for every rollout and carries nothing: the only learning signal is
the selector credit on the selection spans (the profiles that mix in the outcome,
mixed_separated and hybrid_slate, are checked here with that stream silent: a limit, said in
the README). The metric, declared here: the oracle-read rate of the first read_skill call
(sampled at the training temperature, a seed fixed per game) on held-out games (valid_unseen)
before vs after training. Two negative controls train the same way from the same warm start
with the selection utilities (and rewards) permuted within each group, or sign-flipped.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

from skillos.evals.protocol import task_set_hash
from skillos.training.canary import (SIGNALS, Canary, Measured, described, drawn_warm_start, identity,
                                     warm_reading)
from skillos.config.backend import BackendConfig
from skillos.config.loading import load, with_sets
from skillos.config.skillgate import SELECTOR_CREDITS
from skillos.evals.backends.chat import BackendError
from skillos.evals.backends.hf_chat import HFChat
from skillos.evals.envs.registry import environment
from skillos.safety import Ticker
from skillos.training.canary import held_out_games, miniature_games, payoff as table, trained_and_control
from skillos.training.common.warmup import warm_up
from skillos.training.selector.grpo import TaskLastSlateEnv, interleaved
from skillos.training.selector.trainer import train

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "canary-selector.yaml"
# Profiles that give the selection spans no credit of their own by design: the two controls and
# the baseline the method improves on (the outcome reward on every token; the miniature's outcome
# is 0). Their canary could only fail; what one can check of them is the trainer code they share
# with the method, so the method's canary (clean-oracle) on the same code vouches for them.
VOUCHED_BY_METHOD = {"no_skill": "clean-oracle", "task-mask-only": "clean-oracle",
                     "mixed_task_reward": "clean-oracle"}
# --quick: minutes, and its weights move (60 warm-up steps garbled every name: no read, no gradient;
# 800 read, measured); its 8 held-out games reach p < 0.05 only if 6 or more change, all one way.
QUICK = ["training.max_steps=4", "env.n_games=8", "env.n_train_games=8", "canary.warmup_steps=800",
         "canary.warmup_groups=2", "canary.warmup_draws=1", "canary.seeds=[0]", "canary.split=tuning"]


class SelectorCanary(Canary):
    name = "selector"
    # the least a run of this canary imports: an identity without them did not run it (not the hash's list)
    ran = ("skillos.training.selector.canary", "skillos.training.selector.trainer", "skillos.training.selector.credit")
    metric = "oracle read (the first read_skill call, sampled)"

    def config(self, quick: bool = False, variant: str | None = None):
        """The miniature's config as resolved (training/configs/canary-selector.yaml; --quick's size;
        `variant`: the credit profile)."""
        sets = (QUICK if quick else []) + ([f"skillgate.selector_credit={variant}"] if variant else [])
        cfg = load(CONFIG, sets=sets)
        return with_sets(cfg, [f"training.save_steps={cfg.training.max_steps}"])

    variant_option = "--credit"

    @property
    def variants(self) -> tuple:
        """The credit profiles a selector canary can check (`skillos canary selector --credit`)."""
        return tuple(c for c in SELECTOR_CREDITS if c not in VOUCHED_BY_METHOD)

    def key(self, variant: str | None = None) -> str:
        return f"selector:{variant or load(CONFIG).skillgate.selector_credit}"

    def launch_key(self, cfg) -> str:
        """Per credit profile; a profile with no selection credit of its own is vouched for by the
        method's (VOUCHED_BY_METHOD)."""
        credit = cfg.skillgate.selector_credit
        return f"selector:{VOUCHED_BY_METHOD.get(credit, credit)}"

    def payoff(self, quick: bool, echo, variant: str | None = None, compute=()) -> dict:
        """The miniature's payoff table (training/canary/payoff.py) on its held-out slates."""
        import tempfile

        cfg = with_sets(self.config(quick, variant), list(compute))
        with tempfile.TemporaryDirectory() as scratch:  # the slates are rebuilt and frozen by each run
            return payoff(cfg, held_out_games(cfg, echo, "selector"), Path(scratch), echo)

    def measure(self, out: Path, quick: bool, echo, variant: str | None = None, compute=()) -> list:
        import functools

        cfg = with_sets(self.config(quick, variant), [f"training.output_dir={out / 'trained'}", *compute])
        train_games, held_out = miniature_games(cfg, echo, "selector")
        digest = identity.config_digest(cfg)  # every seed's runs are stamped as the canary's
        warm = warm_start(cfg, train_games, out, echo)
        measured = []
        for seed in cfg.canary.seeds:  # one warm start; each seed trains and draws its own samples
            seeded = with_sets(cfg, [f"training.seed={seed}"])
            before, picks = evaluate(seeded, warm, held_out, out / f"seed-{seed}" / "slate-held-out", echo)
            echo(f"canary selector: seed {seed}: before training {_rate(before, picks)}")
            runs = trained_and_control(seeded, out / f"seed-{seed}",
                                       functools.partial(train_and_evaluate, seeded, warm, held_out), echo,
                                       stamp_as=digest)
            chosen = {"before": picks, **{SIGNALS[signal]: run[1] for signal, run in runs.items()}}
            measured.append(Measured(self.metric, before, runs["real"][0], runs["shuffled"][0],
                                     flipped_after=runs["flipped"][0], seed=seed, games=task_set_hash(held_out),
                                     strata={g.id: g.task_type for g in held_out}, detail={
                "held_out_games": len(held_out), "train_games": len(train_games), "steps": cfg.training.max_steps,
                "warm_start_reading": warm_reading(warm),
                "slate_size": cfg.skillgate.slate_size, "chance": 1 / cfg.skillgate.slate_size, "reads": chosen,
                "learning_signal": {SIGNALS[signal]: run[2] for signal, run in runs.items()}}))
        return measured


def train_and_evaluate(cfg, warm: str, held_out, signal: str, folder: Path, echo) -> tuple[dict, dict, dict | None]:
    """GRPO from the warm start into `folder` (signal "shuffled": the utilities permuted, the
    negative control), then the metric on the held-out games: (outcomes, first reads by task type and skill name, the
    run's learning-signal verdict)."""

    run_cfg = with_sets(cfg, [f"training.model={warm}", f"training.output_dir={folder}"])
    echo(f"canary selector: GRPO {cfg.training.max_steps} steps ({described(signal, 'selection utilities')})")
    summary = train(run_cfg, None, echo=echo, warmup=False, signal=signal, env_class=TaskLastSlateEnv)
    # its own slate folder: the trained run and the control may evaluate at once (compute.backend ray)
    outcomes, seen = evaluate(cfg, summary["checkpoints"][-1], held_out, folder / "slate-held-out", echo)
    echo(f"canary selector: after {folder.name} {_rate(outcomes, seen)}")
    return outcomes, seen, summary.get("signal")  # None: a finished run reused


def warm_start(cfg, games, out: Path, echo=None) -> str:
    """The tiny model after a supervised warm-up that reads each slate member equally often, its
    reasoning first saying the task's type in a few words (`said`): a random-init model cannot find
    one word in a prompt of ~1,000 tokens from the selection credit alone, a pretrained one reads
    it; this teaches the reading, not the choice, which stays even over the slate whatever the
    type said. Its prompts are the miniature's (TaskLastSlateEnv)."""
    return drawn_warm_start(cfg, out / "warm", functools.partial(_warm_up, cfg, games, out, echo=echo), echo,
                            "canary selector")


def _warm_up(cfg, games, out: Path, folder: Path, seed: int, echo=None) -> None:
    """One draw of the warm start (warm_start's) into `folder`, its order and new embeddings drawn with `seed`."""
    slate_domain = environment("slate")
    setup = slate_domain.make_slate_setup(cfg, games, out / "slate-warm")
    conversations = []
    for game in interleaved(games)[:cfg.canary.warmup_groups]:  # every task type's slates
        text = TaskLastSlateEnv(setup).reset(game_id=game.id)
        for pick in setup.slates[game.id].order:
            call = {"name": slate_domain.READ_TOOL, "arguments": {"name": pick}}
            conversations.append([{"role": "system", "content": slate_domain.SYSTEM},
                                  {"role": "user", "content": slate_domain.SLATE_INSTRUCTIONS + "\n\n" + text},
                                  {"role": "assistant", "content": reasoning(game.task_type),
                                   "tool_calls": [{"id": f"call_{len(conversations)}", "type": "function",
                                                   "function": call}]}])
    random.Random(seed).shuffle(conversations)
    warm_up(cfg.training.model, conversations, slate_domain.tool_schemas(), folder, steps=cfg.canary.warmup_steps,
            learning_rate=cfg.canary.warmup_learning_rate, seed=seed, decay=True,
            echo=echo, attention_window=cfg.canary.attention_window, weigh_content=True,
            call_tokens=cfg.canary.call_tokens)  # a line per 10% or 10 s: a full warm start takes minutes


def reasoning(task_type: str) -> str:
    """The warm start's selection reasoning: the task's type, in its word (not a choice)."""
    slate_domain = environment("slate")
    word = task_type.split("_")[1] if task_type.count("_") else task_type
    return f"{slate_domain.REASONING_OPEN}A {word} task.{slate_domain.REASONING_CLOSE}"


def payoff(cfg, held_out, slate_dir: Path, echo=None) -> dict:
    """The payoff table of the miniature on `held_out` (training/canary/payoff.py): the oracle-read
    rate of each naming rule a listing alone supports (read the k-th listed name; read a given
    name whenever it is listed; read nothing) and of reading the oracle (the input-dependent
    answer), per task type."""

    setup = environment("slate").make_slate_setup(cfg, held_out, slate_dir)
    slates = {g.id: setup.slates[g.id] for g in held_out}
    names = sorted({n for s in slates.values() for n in s.order})
    size = max(len(s.order) for s in slates.values())
    rules = {"no read": lambda s: None} | {f"the listed name at {k + 1}": (lambda s, k=k: s.order[k] if k < len(s.order)
                                                                          else None) for k in range(size)} | {
        f"{n} whenever listed": (lambda s, n=n: n if n in s.order else None) for n in names}
    answers = {rule: {gid: pick(s) == s.oracle for gid, s in slates.items()} for rule, pick in rules.items()}
    made = table.table(answers, {gid: True for gid in slates}, {g.id: g.task_type for g in held_out})
    for line in table.lines(made):
        (echo or print)(f"canary selector: {line}")
    return made


def evaluate(cfg, model: str, held_out, slate_dir: Path, echo=None) -> tuple[dict, dict]:
    """(held-out game id -> the first read is the oracle, None: unmeasured; {"reads": task type ->
    skill name -> first reads, "said": replies whose reasoning said the task's type}),
    sampled at the training temperature with a seed fixed per game (the same draw before and
    after training: what moves is the policy's distribution)."""
    slate_domain = environment("slate")

    import hashlib

    import torch

    chat = HFChat(BackendConfig(backend="hf", model=model, temperature=cfg.training.temperature,
                                max_tokens=cfg.training.max_completion_length, timeout_s=120))
    setup = slate_domain.make_slate_setup(cfg, held_out, slate_dir)
    outcomes, names = {}, {}
    said = {"right": 0, "of": 0}  # replies whose reasoning said the task's type
    tick = Ticker(echo, "canary selector: held-out games played", len(held_out))
    for game in held_out:
        tick(len(outcomes))
        text = TaskLastSlateEnv(setup).reset(game_id=game.id)
        draw = f"canary|{game.id}" + (f"|{cfg.training.seed}" if cfg.training.seed else "")  # per training seed
        torch.manual_seed(int(hashlib.sha256(draw.encode()).hexdigest()[:8], 16))  # the same draw each time
        try:
            reply = chat.chat([{"role": "system", "content": slate_domain.SYSTEM},
                               {"role": "user", "content": slate_domain.SLATE_INSTRUCTIONS + "\n\n" + text}], tools=slate_domain.tool_schemas())
        except BackendError:
            outcomes[game.id] = None
            continue
        said["of"] += 1
        said["right"] += reasoning(game.task_type) in (reply.text or "")
        reads = [c["arguments"].get("name") for c in reply.tool_calls
                 if c["name"] == slate_domain.READ_TOOL and isinstance(c["arguments"], dict)]
        first = reads[0] if reads else None
        outcomes[game.id] = first == setup.slates[game.id].oracle
        read = names.setdefault(game.task_type, {})  # by task type: does the name follow the slate?
        read[str(first)] = read.get(str(first), 0) + 1
    tick(len(outcomes))
    return outcomes, {"reads": names, "said": said}


def _rate(outcomes: dict, seen: dict) -> str:
    measured = [v for v in outcomes.values() if v is not None]
    said = seen["said"]
    return (f"oracle read {sum(measured)}/{len(measured)} ({len(outcomes) - len(measured)} unmeasured); reasoning "
            f"said the task's type in {said['right']} of {said['of']}; first reads by type {seen['reads']}")


CANARY = SelectorCanary()
