"""The curator's learning canary: SkillOS GRPO (training/trainer.py, the curator environment,
the composite reward, every rollout in flight) on a miniature the tiny CPU model can learn.

The miniature, and why. The tiny model (0.4M parameters, random init) cannot invent prose, so
it starts from a supervised warm-up on the real first curator inputs of its train groups (the
same `warm_up` the CPU smoke run uses), each answered with one of a few short, well-formed skills
in plain English: the miniature's stand-in for a pretrained model's prior. The warm-up sees 80
distinct first positions (160 train games): the tiny model writes the call only for prompts like
those it was warmed on, and warmed on 12 it wrote no call in 61 of 80 samples on held-out
prompts (11 of 20 prompts never), so GRPO's groups were all-malformed or all-alike and the
before/after metric measured the format; warmed on 80 it wrote a well-formed call in 80 of 80. One of them helps the
reading executor on the task types of the miniature (heat and cool tasks, where the executor
without skills runs out of its 30 steps searching: 1/10 and 4/10 won on the quickstart): it
says where to look first. The others send it to the wrong places, and the prior puts three
quarters of its mass on those. So what GRPO can learn is which skill to write, and it learns it
only through r_task: the executor reading the skill and winning position 2 of its group
(|G| = 2). The metric, declared here: executor success at position 2 of held-out groups
(valid_unseen, floor plans train never uses) with the skill the curator samples (training
temperature, a seed fixed per group), before vs after training. Two negative controls train the
same way from the same warm start, one with the rewards permuted within each group, one with them
sign-flipped.
"""

from __future__ import annotations

import random
from pathlib import Path

from skillos.evals.protocol import task_set_hash
from skillos.training.canary import SIGNALS, Canary, Measured, described, identity

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "canary-curator.yaml"
# The skills the warm start writes, with how often (its prior): short, so the tiny model writes
# them well-formed when it samples. The first sends the executor where food and cups are in these
# kitchens; measured on the 20 held-out groups, position 2 won heat 7/10 and cool 4/10 with it,
# against 1/10 and 2/10 with no skill; the others send it to the cabinets or the shelves (heat
# 1/10, cool 2/10 and 1/10). A quarter of the prior's mass is on the helpful one.
PRIOR = (
    ("food-first", "Look for the X on the countertop, in the fridge and in the sinkbasin first.", 2),
    ("cabinets-first", "Look for the X in the cabinets and drawers first.", 3),
    ("shelves-first", "Look for the X on the shelves and in the drawers first.", 3),
)
# --quick: the same pipeline at a size that runs in minutes (CI's slow suite): its weights move
# (the warm start covers all 4 train groups; 60 steps on 2 wrote no call and no step had a
# gradient, measured), but 4 held-out groups cannot show learning (smallest p 0.125).
QUICK = ["training.max_steps=4", "env.n_games=8", "env.n_train_games=8", "canary.warmup_steps=600",
         "canary.warmup_groups=4", "canary.seeds=[0]", "canary.split=tuning"]


class CuratorCanary(Canary):
    name = "curator"
    # the least a run of this canary imports: an identity without them did not run it (not the hash's list)
    ran = ("skillos.training.canary.curator", "skillos.training.trainer", "skillos.training.reward")
    metric = "executor success at position 2 with the curator's sampled skill"

    def config(self, quick: bool = False, variant: str | None = None):
        """The miniature's config as resolved (training/configs/canary-curator.yaml; --quick's size)."""
        from skillos import config as cfgmod

        cfg = cfgmod.load(CONFIG, sets=QUICK if quick else [])
        return cfgmod.with_sets(cfg, [f"training.save_steps={cfg.training.max_steps}"])  # the last step is kept

    def measure(self, out: Path, quick: bool, echo, variant: str | None = None, compute=()) -> list:
        import functools

        from skillos import config as cfgmod
        from skillos.training.canary import miniature_games, trained_and_control

        cfg = cfgmod.with_sets(self.config(quick), [f"training.output_dir={out / 'trained'}", *compute])
        train_games, held_out = miniature_games(cfg, echo, "curator")
        digest = identity.config_digest(cfg)  # every seed's runs are stamped as the canary's
        warm = warm_start(cfg, train_games, out / "warm", echo)
        measured = []
        for seed in cfg.canary.seeds:  # one warm start; each seed trains and draws its own samples
            seeded = cfgmod.with_sets(cfg, [f"training.seed={seed}"])
            before = evaluate(seeded, warm, held_out, echo)
            echo(f"canary curator: seed {seed}: before training {_rate(before)}")
            runs = trained_and_control(seeded, out / f"seed-{seed}",
                                       functools.partial(train_and_evaluate, seeded, warm, held_out), echo,
                                       stamp_as=digest)
            measured.append(Measured(self.metric, before, runs["real"][0], runs["shuffled"][0],
                                     flipped_after=runs["flipped"][0], seed=seed, games=task_set_hash(held_out),
                                     detail={
                "held_out_groups": len(before), "train_games": len(train_games), "steps": cfg.training.max_steps,
                "prior": {name: weight for name, _, weight in PRIOR},
                # None: a run this canary's folder had finished before (reused) left no history here
                "mean_reward": {s: [round(h["mean_reward"], 3) for h in r[1]] or None for s, r in runs.items()},
                "task_share": {s: [h.get("task_share") for h in r[1]] or None for s, r in runs.items()},
                "learning_signal": {SIGNALS[s]: r[2] for s, r in runs.items()}}))
        return measured


def train_and_evaluate(cfg, warm: str, held_out, signal: str, folder: Path, echo) -> tuple[dict, list, dict | None]:
    """GRPO from the warm start into `folder` (signal "shuffled" or "flipped": a negative control), then the
    metric on the held-out groups: (outcomes, the reward history of each step, the run's
    learning-signal verdict)."""
    from skillos import config as cfgmod
    from skillos.training.trainer import train

    run_cfg = cfgmod.with_sets(cfg, [f"training.model={warm}", f"training.output_dir={folder}"])
    echo(f"canary curator: GRPO {cfg.training.max_steps} steps ({described(signal, 'rewards')})")
    summary = train(run_cfg, None, echo=echo, warmup=False, signal=signal)
    after = evaluate(cfg, summary["checkpoints"][-1], held_out, echo)
    echo(f"canary curator: after {folder.name} {_rate(after)}")
    return after, summary["steps"], summary.get("signal")  # None: a finished run reused


def warm_start(cfg, games, folder: Path, echo=None) -> str:
    """The tiny model after the supervised warm-up on PRIOR (built once into `folder`)."""
    from skillos.evals.curation import CURATOR_INSTRUCTIONS, TOOL_SURFACES
    from skillos.evals.envs.registry import environment
    from skillos.training.env import CuratorEnv, make_setup
    from skillos.training.groups import build_groups
    from skillos.training.warmup import warm_up

    if (folder / "config.json").is_file():
        return str(folder.resolve())
    c = cfg.canary
    setup = make_setup(cfg, games)
    system = environment(cfg).curator_system
    user = CURATOR_INSTRUCTIONS["curate_and_advance"] + "\n\n"
    conversations = []
    for group in build_groups(games, 2, c.warmup_groups, cfg.training.seed or 0):
        text = CuratorEnv(setup).reset(**group.row())
        for name, content, weight in PRIOR:
            for _ in range(weight):
                call = {"name": "curate_and_advance", "arguments": {"operations": [
                    {"op": "insert", "skill_name": name, "content": content}]}}
                conversations.append([{"role": "system", "content": system}, {"role": "user", "content": user + text},
                                      {"role": "assistant", "content": "", "tool_calls": [
                                          {"id": f"call_{len(conversations)}", "type": "function", "function": call}]}])
    random.Random(cfg.training.seed or 0).shuffle(conversations)
    warm_up(cfg.training.model, conversations, TOOL_SURFACES["curate_and_advance"], folder,
            steps=c.warmup_steps, learning_rate=c.warmup_learning_rate, seed=cfg.training.seed or 0, decay=True,
            echo=echo)  # a line per 10% or 10 s: a full warm start takes minutes
    identity.stamp(folder, identity.config_digest(cfg))  # a rerun reuses it only for this code
    return str(folder.resolve())


def evaluate(cfg, model: str, held_out, echo=None) -> dict:
    """Held-out game id -> executor success at position 2 of its group, with the skill the
    curator `model` writes after seeing position 1, sampled at the training temperature with a
    seed fixed per group and training seed (the same draw before and after training: what moves
    is the policy's distribution, which is what GRPO changes; each training seed its own draws);
    None: the game was unmeasured."""
    from skillos.config import BackendConfig
    from skillos.evals.backends.chat import BackendError
    from skillos.evals.backends.hf_chat import HFChat
    from skillos.evals.curation import CURATOR_INSTRUCTIONS, TOOL_SURFACES
    from skillos.evals.envs.registry import environment
    from skillos.safety import Ticker
    from skillos.training.env import CuratorEnv, finish, make_setup

    import hashlib

    import torch

    chat = HFChat(BackendConfig(backend="hf", model=model, temperature=cfg.training.temperature,
                                max_tokens=cfg.training.max_completion_length, timeout_s=120))
    setup = make_setup(cfg, held_out)
    system = environment(cfg).curator_system
    user = CURATOR_INSTRUCTIONS["curate_and_advance"] + "\n\n"
    by_type: dict[str, list] = {}
    for game in held_out:
        by_type.setdefault(game.task_type, []).append(game.id)
    outcomes = {}
    tick = Ticker(echo, "canary curator: held-out groups played", sum(len(ids) // 2 for ids in by_type.values()))
    for task_type, ids in by_type.items():
        for first, second in zip(ids[0::2], ids[1::2]):
            tick(len(outcomes))
            env = CuratorEnv(setup)
            text = env.reset(game_ids=[first, second], task_type=task_type)
            # the same draw before and after training: a seed per held-out group and training seed
            draw = f"canary|{first}|{second}" + (f"|{cfg.training.seed}" if cfg.training.seed else "")
            torch.manual_seed(int(hashlib.sha256(draw.encode()).hexdigest()[:8], 16))
            try:
                reply = chat.chat([{"role": "system", "content": system}, {"role": "user", "content": user + text}],
                                  tools=TOOL_SURFACES["curate_and_advance"])
            except BackendError:  # the curator could not answer: position 2 is unmeasured
                outcomes[second] = None
                continue
            operations = next((c["arguments"].get("operations") for c in reply.tool_calls
                               if c["name"] == "curate_and_advance" and isinstance(c["arguments"], dict)), [])
            env.curate_and_advance(operations if isinstance(operations, list) else [])
            outcomes[second] = finish(env).positions[1]
    tick(len(outcomes))
    return outcomes


def _rate(outcomes: dict) -> str:
    measured = [v for v in outcomes.values() if v is not None]
    return f"{sum(measured)}/{len(measured)} won ({len(outcomes) - len(measured)} unmeasured)"


CANARY = CuratorCanary()
