"""The curator's learning canary: SkillOS GRPO (training/curator/trainer.py, the curator environment,
the composite reward, the play-ahead pipeline, every rollout in flight) on a miniature made for the
tiny CPU model (every look at it: docs/canaries.md).

The miniature, and why. The tiny model (0.4M parameters, random init) cannot invent prose, so
it starts from a supervised warm-up on the real curator inputs of 80 train groups, each answered
with one of two short, well-formed skills in plain English, evenly: the miniature's stand-in for a
pretrained model's prior. Each skill tells the executor one procedure, its own task type's (heat
with the microwave, clean with the sinkbasin), and the repo holds one procedure
(training.max_instructions 1), so a skill right for one type leaves the other to trial and error
within env.max_steps 27, and no skill (written, or recombined from the two skills' sentences) is
right for both. The payoff table (printed before every run, training/canary/payoff.py) shows every
such constant answer losing a type detectably; the canary's strata are the task types, and each
must improve on its own (training/canary RULE). The curator reads each game's task, skills, step count and result, not its
steps (curator.history_length 0), and each warm-start turn first says the task's type, those words
weighted as the rest of the turn (warmup.weigh_content), from a model that attends to its last
canary.attention_window tokens: without these a random-init model did not find the task's word in
its prompt (measured, docs/canaries.md).

Each rollout is a group of |G| = 3: the curator writes after position 1, reads position 2's
result from its tool call (the kept tool result: masked in the loss, the pipeline's later turn)
and writes again before position 3; the warm-up covers that second turn too (the skill replaced
by the other, or kept). Two prompts per step. What GRPO can learn is which skill to
write for which task, and it learns it only through r_task. The metric, declared here: executor
success at position 2 of held-out groups (valid_seen: games train never plays, in its floor
plans; in valid_unseen rooms the executor runs out of steps searching and neither skill moves it,
measured) with the skill the curator samples (training temperature, a seed fixed per group),
before vs after training; position 3 and what each turn wrote, by task type, are reported beside
it. Two negative controls train the same way from the same warm start, one with the rewards
permuted within each group, one with them sign-flipped.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import random
import re
from pathlib import Path

from skillos.evals.protocol import task_set_hash
from skillos.training.canary import (SIGNALS, Canary, Measured, by_task_type, described, drawn_warm_start, identity,
                                     warm_reading)
from skillos.config.backend import BackendConfig
from skillos.config.loading import load, with_sets
from skillos.errors import SkillosError
from skillos.evals.backends.chat import BackendError
from skillos.evals.backends.hf_chat import HFChat
from skillos.evals.curation import CURATOR_INSTRUCTIONS, TOOL_SURFACES
from skillos.evals.envs.household.heuristic.reading import TRANSFORMS, read as read_skill
from skillos.evals.envs.registry import environment
from skillos.repo import Skill, SkillRepo
from skillos.safety import Ticker
from skillos.training.canary import held_out_games, miniature_games, payoff as table, trained_and_control
from skillos.training.common.warmup import warm_up
from skillos.training.curator.env import CuratorEnv, finish, make_setup, state_of
from skillos.training.curator.groups import build_groups
from skillos.training.curator.trainer import train

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "canary-curator.yaml"
# The skills the warm start writes, the task type each is right for, and how often (its prior):
# short, so the tiny model writes them well-formed when it samples. Each tells the executor one
# procedure, its own type's, with the right appliance; the miniature's repo holds one procedure
# (training.max_instructions 1: a write that would tell two is refused and changes nothing), so no
# skill, written or recombined from these sentences, is right for both types: the reading executor
# keys each instruction by the verb its task names, and a skill telling both verbs was right for
# both types whatever the task (measured at stop 74). The payoff table, printed before every run,
# measures each constant answer losing a type on the held-out groups; docs/canaries.md has the
# tuning split's. The prior is even, and the names carry no task word, so retrieval cannot pick for
# the executor.
PRIOR = (
    ("way-a", "Heat the X with the microwave. Then put it in the Y.", 1, "pick_heat_then_place_in_recep"),
    ("way-b", "Clean the X with the sinkbasin. Then put it in the Y.", 1, "pick_clean_then_place_in_recep"),
)
# --quick: the same pipeline at a size that runs in minutes (CI's slow suite): its weights move
# (the warm start covers 4 train groups; 60 steps on 2 wrote no call and no step had a gradient,
# measured), but 4 held-out groups of 3 cannot show learning (smallest p 0.125).
QUICK = ["training.max_steps=4", "training.per_device_train_batch_size=8", "training.num_generations=4",
         "training.generation_batch_size=8", "env.n_games=12", "env.n_train_games=12", "canary.warmup_steps=600",
         "canary.warmup_groups=4", "canary.seeds=[0]", "canary.split=tuning",
         # 12 train games hold too few that a skill decides for a group of each type; one warm-start draw
         "canary.decisive_train=false", "canary.warmup_draws=1"]


# --variant async: the same miniature with its rollouts played one step ahead (training/curator/async_rollouts.py),
# the code path a launch with training.async_rollouts runs, vouched for by its own canary
ASYNC = ["training.async_rollouts=true", "training.max_staleness=1"]


class CuratorCanary(Canary):
    name = "curator"
    variants = ("async",)
    # the least a run of this canary imports: an identity without them did not run it (not the hash's list)
    ran = ("skillos.training.curator.canary", "skillos.training.curator.trainer", "skillos.training.curator.reward")
    metric = "executor success at position 2 with the curator's sampled skill"
    def config(self, quick: bool = False, variant: str | None = None):
        """The miniature's config as resolved (training/configs/canary-curator.yaml; --quick's size)."""
        cfg = load(CONFIG, sets=(QUICK if quick else []) + (ASYNC if variant == "async" else []))
        return with_sets(cfg, [f"training.save_steps={cfg.training.max_steps}"])  # the last step is kept

    def key(self, variant: str | None = None) -> str:
        return f"{self.name}:{variant}" if variant else self.name

    def payoff(self, quick: bool, echo, variant: str | None = None, compute=()) -> dict:
        """The miniature's payoff table (training/canary/payoff.py) on its held-out groups."""

        cfg = with_sets(self.config(quick, variant), list(compute))
        return payoff(cfg, held_out_games(cfg, echo, "curator"), echo)

    def measure(self, out: Path, quick: bool, echo, variant: str | None = None, compute=()) -> list:
        cfg = with_sets(self.config(quick, variant), [f"training.output_dir={out / 'trained'}", *compute])
        train_games, held_out = miniature_games(cfg, echo, "curator")
        digest = identity.config_digest(cfg)  # every seed's runs are stamped as the canary's
        pool = decisive(cfg, train_games, echo) if cfg.canary.decisive_train else None  # GRPO's games
        warm = warm_start(cfg, train_games, out / "warm", echo)
        measured = []
        for seed in cfg.canary.seeds:  # one warm start; each seed trains and draws its own samples
            seeded = with_sets(cfg, [f"training.seed={seed}"])
            before, seen = evaluate(seeded, warm, held_out, echo)
            echo(f"canary curator: seed {seed}: before training {_rate(before, seen)}")
            runs = trained_and_control(seeded, out / f"seed-{seed}",
                                       functools.partial(train_and_evaluate, seeded, warm, held_out, games=pool), echo,
                                       stamp_as=digest)
            measured.append(Measured(self.metric, before, runs["real"][0], runs["shuffled"][0],
                                     flipped_after=runs["flipped"][0], seed=seed, games=task_set_hash(held_out),
                                     strata=seen["strata"], detail={
                "held_out_groups": len(before), "group_size": cfg.training.group_size,
                "train_games": len(train_games), "steps": cfg.training.max_steps,
                "grpo_train_games": {_short(t): len(g) for t, g in by_task_type(pool or train_games).items()},
                "warm_start_reading": warm_reading(warm),
                "prior": {name: weight for name, _, weight, _ in PRIOR},
                # did each turn say the task's type before its call (the warm start taught it to read that)?
                "restated": {"before": seen["restated"], **{SIGNALS[s]: r[3]["restated"] for s, r in runs.items()}},
                # what each turn wrote, by task type: the right skill differs by type
                "written": {"before": seen["written"], **{SIGNALS[s]: r[3]["written"] for s, r in runs.items()}},
                # what the written skills' content tells the executor, by task type: what the reward follows
                "told": {"before": seen["told"], **{SIGNALS[s]: r[3]["told"] for s, r in runs.items()}},
                "position_3": {"before": _share(seen["position_3"]),
                               **{SIGNALS[s]: _share(r[3]["position_3"]) for s, r in runs.items()}},
                # None: a run this canary's folder had finished before (reused) left no history here
                "mean_reward": {s: [round(h["mean_reward"], 3) for h in r[1]] or None for s, r in runs.items()},
                "task_share": {s: [h.get("task_share") for h in r[1]] or None for s, r in runs.items()},
                "learning_signal": {SIGNALS[s]: r[2] for s, r in runs.items()}}))
        return measured


def train_and_evaluate(cfg, warm: str, held_out, signal: str, folder: Path, echo, games=None) -> tuple:
    """GRPO from the warm start into `folder` (signal "shuffled" or "flipped": a negative control) on the
    train pool `games` (default: the config's), then the metric on the held-out groups: (outcomes,
    the reward history of each step, the run's learning-signal verdict, what else the evaluation
    measured)."""

    run_cfg = with_sets(cfg, [f"training.model={warm}", f"training.output_dir={folder}"])
    echo(f"canary curator: GRPO {cfg.training.max_steps} steps ({described(signal, 'rewards')})")
    summary = train(run_cfg, None, echo=echo, warmup=False, signal=signal, games=games)
    after, seen = evaluate(cfg, summary["checkpoints"][-1], held_out, echo)
    echo(f"canary curator: after {folder.name} {_rate(after, seen)}")
    return after, summary["steps"], summary.get("signal"), seen  # signal None: a finished run reused


def warm_start(cfg, games, folder: Path, echo=None) -> str:
    """The tiny model after the supervised warm-up on PRIOR (built once into `folder`): for each
    warm-up group, every first call, and after each first call's real tool result (position 2
    played with that skill) every second call: the other skill replacing it (an update: inserting
    it beside the first would exceed training.max_instructions), or the same one kept (an empty
    call). So the model writes the call at every turn a rollout reaches and chooses nothing by its
    input. Each turn first says the task's type in a few words (`said`): a random-
    init model cannot find one word in a prompt of ~1,500 tokens from the reward alone (measured:
    not learned in 20 steps), a pretrained one reads it; this teaches the reading, not the choice,
    which stays even between the skills whatever the type said."""

    return drawn_warm_start(cfg, folder, functools.partial(_warm_up, cfg, games, echo=echo), echo, "canary curator")


def _warm_up(cfg, games, folder: Path, seed: int, echo=None) -> None:
    """One draw of the warm start (warm_start's), its groups, order and new embeddings drawn with `seed`."""
    c = cfg.canary
    setup = make_setup(cfg, games)
    opening = _opening(environment(cfg).curator_system)
    conversations = []
    for group in build_groups(games, cfg.training.group_size, c.warmup_groups, seed,
                              grouping=cfg.training.grouping, curriculum="none"):  # a warm start's order is its own
        said = said_type(group.task_type)
        for name, content, weight, _ in PRIOR:
            env = CuratorEnv(setup)
            messages = opening(env.reset(**group.row()))
            for _ in range(weight):
                conversations.append(messages + [_call(name, content, len(conversations), said)])
            if cfg.training.group_size < 3:
                continue
            first = messages + [_call(name, content, len(conversations), said)]
            answer = env.curate_and_advance(_operations(name, content))
            then = first + [{"role": "tool", "name": "curate_and_advance", "content": answer}]
            for second, text, again, _ in PRIOR:  # the same skill again: keep it; the other: replace it
                for _ in range(weight * again):
                    conversations.append(then + [_call(second, text, len(conversations), said, keep=second == name,
                                                       replacing=name)])
    random.Random(seed).shuffle(conversations)
    warm_up(cfg.training.model, conversations, TOOL_SURFACES["curate_and_advance"], folder,
            steps=c.warmup_steps, learning_rate=c.warmup_learning_rate, seed=seed, decay=True,
            echo=echo, attention_window=c.attention_window, weigh_content=True, call_tokens=c.call_tokens)  # a line per 10% or 10 s: a full warm start takes minutes


def decisive(cfg, games, echo=None) -> list:
    """The train games GRPO draws its groups from with canary.decisive_train: those each task type's
    own skill (PRIOR) wins and every other skill loses, played at position 2 as a rollout plays them
    (the deterministic executor's plays are kept, so training in this process replays none of them).
    On the rest either skill wins, or neither, and every completion of a group earns the same task
    reward: 3 of 4 train games at env.max_steps 27 (measured). The held-out games are not chosen:
    the metric reads them all."""

    setup = make_setup(cfg, games)
    own = {task_type: name for name, _, _, task_type in PRIOR}
    types = by_task_type(games)
    kept = []
    try:
        for task_type, of_type in types.items():
            for i, game in enumerate(of_type):
                other = of_type[i - 1].id  # position 1's game (and any after 2): any other of the type
                ids = [other, game.id] + [other] * (cfg.training.group_size - 2)
                won = {name: _second_position(setup, task_type, ids, _operations(name, content))
                       for name, content, _, _ in PRIOR}
                if won[own[task_type]] is True and all(v is False for n, v in won.items() if n != own[task_type]):
                    kept.append(game)
    finally:
        setup.close()
    counts = {t: (sum(g.task_type == t for g in kept), len(of_type)) for t, of_type in types.items()}
    short = [t for t, (n, _) in counts.items() if n < cfg.training.group_size]
    if short:
        raise SkillosError(f"canary curator: {short[0]}: {counts[short[0]][0]} of its {counts[short[0]][1]} train "
                           f"games are won by its own skill and lost by the other's; a group needs "
                           f"training.group_size {cfg.training.group_size}: raise env.n_train_games")
    (echo or print)("canary curator: GRPO trains on the train games each type's own skill wins and the other's loses: "
                    + ", ".join(f"{_short(t)} {n} of {total}" for t, (n, total) in counts.items()))
    return kept


def said_type(task_type: str) -> str:
    """What the warm start's turns say before their call: the task's type, in its word."""
    return f"A {_short(task_type)} task."


def _opening(system: str):
    user = CURATOR_INSTRUCTIONS["curate_and_advance"] + "\n\n"
    return lambda text: [{"role": "system", "content": system}, {"role": "user", "content": user + text}]


def _operations(name: str, content: str, replacing: str | None = None) -> list:
    if replacing:
        return [{"op": "update", "skill_name": replacing, "new_name": name, "new_content": content}]
    return [{"op": "insert", "skill_name": name, "content": content}]


def _call(name: str, content: str, index: int, said: str = "", keep: bool = False,
          replacing: str | None = None) -> dict:
    """An assistant turn saying `said`, then calling curate_and_advance to insert one skill
    (`replacing`: in place of that one; `keep`: to change nothing), the warm start's target."""
    operations = [] if keep else _operations(name, content, replacing)
    call = {"name": "curate_and_advance", "arguments": {"operations": operations}}
    return {"role": "assistant", "content": said, "tool_calls": [{"id": f"call_{index}", "type": "function",
                                                                  "function": call}]}


def _sentences(text: str) -> list:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def _same(sentence: str) -> str:
    """A sentence as compared with another: its end mark does not make it another sentence."""
    return sentence.rstrip(".!? ").strip()


def _verb(sentence: str) -> str:
    """The instruction a sentence gives, as the reading executor reads it: its first act's verb
    ("First, heat the X..." is a heat instruction), else its first word."""
    acts = read_skill(Skill("sentence", "one sentence of a skill", sentence)).acts
    return acts[0].op if acts else sentence.split()[0].lower()


def recombined(prior=PRIOR) -> dict:
    """Constant skills made of the prior skills' own sentences, recombined: one skill holding, for
    each instruction verb (as the reading executor reads it), none or one of the sentences the
    skills give it, with the sentences every skill shares ("Then put it in the Y.") kept, each
    sentence near the place it has in the skills (its mean relative position), except the prior
    skills themselves and an empty skill. A sampled turn mixes the skills' sentences (measured: a
    turn naming fridge-first wrote "Heat the X with the microwave. Heat the X with the sinkbasin,
    not the fridge."), and the reading executor takes from a skill each instruction its task's verb
    concerns, so one such skill can be right for every type: a constant answer the payoff table
    must hold. {label: content}."""
    own = [_sentences(content) for _, content, _, _ in prior]
    said = [[_same(s) for s in sentences] for sentences in own]
    text: dict = {}  # a sentence as compared -> its text as first written
    for sentences in own:
        for sentence in sentences:
            text.setdefault(_same(sentence), sentence)
    first = list(text)
    place = {s: (sum(ss.index(s) / len(ss) for ss in said if s in ss) / sum(s in ss for ss in said), first.index(s))
             for s in first}
    order = sorted(first, key=place.get)
    shared = [s for s in order if all(s in ss for ss in said)]
    by_verb: dict = {}
    for sentence in order:
        if sentence not in shared:
            by_verb.setdefault(_verb(text[sentence]), []).append(sentence)
    out = {}
    for chosen in itertools.product(*[[None, *options] for options in by_verb.values()]):
        picked = [s for s in chosen if s]
        kept = sorted(picked + shared, key=order.index)
        if not kept or set(kept) in [set(ss) for ss in said]:
            continue
        label = "; ".join(_same(text[s]) for s in sorted(picked, key=order.index)) or "nothing but the shared steps"
        out[f"one skill saying: {label}"] = " ".join(text[s] for s in kept)
    return out


def payoff(cfg, held_out, echo=None) -> dict:
    """The payoff table of the miniature on `held_out` (training/canary/payoff.py): position-2
    success of each held-out group when the curator's first turn inserts each constant answer the
    tool allows from PRIOR (no skill, each skill, each ordered pair in one call, and one skill of
    the prior's sentences recombined: `recombined`) and keeps it, and when it inserts the skill its
    group's type needs (the input-dependent answer)."""

    setup = make_setup(cfg, held_out)
    groups = held_out_groups(held_out, cfg.training.group_size)
    skills = {name: (name, content, task_type) for name, content, _, task_type in PRIOR}
    answers = {"no skill": []} | {name: [name] for name in skills} | {
        f"{a} + {b}": [a, b] for a, b in itertools.permutations(skills, 2)}
    mixed = recombined()
    answers |= {label: [label] for label in mixed}
    texts = {name: content for name, (_, content, _) in skills.items()} | mixed

    def second_position(task_type, ids, names) -> bool | None:
        return _second_position(setup, task_type, ids, [o for i, n in enumerate(names) for o in
                                                        _operations(n if n in skills else f"recombined-{i}", texts[n])])

    outcomes = {}
    for answer, names in answers.items():
        refused = setup.capacity is not None and _refused(setup.capacity, [texts[n] for n in names])
        label = answer + (f" (refused: over {refused}, the repo stays as before)" if refused else "")
        outcomes[label] = {ids[1]: second_position(t, ids, names) for t, ids in groups}
    right = {t: [n for n, (_, _, for_type) in skills.items() if for_type == t] for t, _ in groups}
    dependent = {ids[1]: second_position(t, ids, right[t][:1]) for t, ids in groups}
    made = table.table(outcomes, dependent, {ids[1]: t for t, ids in groups})
    for line in table.lines(made):
        (echo or print)(f"canary curator: {line}")
    return made


def _second_position(setup, task_type: str, ids, operations: list) -> bool | None:
    """Position 2's outcome in a group of `ids` when the curator's first turn applies `operations`
    (None: unmeasured), played as a rollout plays it."""
    env = CuratorEnv(setup)
    env.reset(game_ids=list(ids), task_type=task_type)
    env.curate_and_advance(operations)
    return state_of(env).positions[1]


def _refused(capacity, texts: list) -> str | None:
    """The bound a constant answer's skills would exceed, named (its write, or its second, is then
    refused and the repo stays as it was: the row plays what the environment keeps); else None."""
    repo = SkillRepo(None)
    for i, text in enumerate(texts):
        repo.insert(f"answer-{i}", "one constant answer", text)
    return f"{capacity.key} {capacity.most}" if capacity.over(repo) else None


def held_out_groups(held_out, size: int) -> list:
    """(task type, game ids) of each held-out group: |G| games of one type, in order, keyed by its
    second game (the metric's position)."""
    by_type = {t: [g.id for g in games] for t, games in by_task_type(held_out).items()}
    return [(t, ids[i:i + size]) for t, ids in by_type.items() for i in range(0, len(ids) - size + 1, size)]


def evaluate(cfg, model: str, held_out, echo=None) -> tuple[dict, dict]:
    """(held-out group -> executor success at position 2, None: unmeasured; what else it
    measured). The curator `model` plays each held-out group as a training rollout does: it
    writes after position 1, reads what position 2 did (the tool result) and writes again before
    position 3, each turn sampled at the training temperature with a seed fixed per group and
    training seed (the same draw before and after training: what moves is the policy's
    distribution, which is what GRPO changes; each training seed its own draws). A group is keyed
    by its second game. The rest: position 3's outcomes, each group's task type (the canary's
    strata), and the skill each turn wrote, counted by task type (does the choice follow the
    input?)."""

    import torch

    # sampled as training samples where the backend can say it: training.top_k k >= 1; None and 0 (TRL's
    # whole vocabulary) leave generate's own 50, which every earlier look's evaluation used
    chat = HFChat(BackendConfig(backend="hf", model=model, temperature=cfg.training.temperature,
                                top_k=cfg.training.top_k or None,
                                max_tokens=cfg.training.max_turn_tokens or cfg.training.max_completion_length,
                                timeout_s=120))  # a turn's cap, as training's generation calls get it
    size = cfg.training.group_size
    setup = make_setup(cfg, held_out)
    opening = _opening(environment(cfg).curator_system)
    outcomes, later, strata = {}, {}, {}
    groups = held_out_groups(held_out, size)
    written: dict = {t: {} for t, _ in groups}
    told: dict = {t: {} for t, _ in groups}  # what the written skills tell the executor, by task type
    restated = {"right": 0, "of": 0}  # turns that said their task's type before the call
    tick = Ticker(echo, "canary curator: held-out groups played", len(groups))
    for done, (task_type, ids) in enumerate(groups):
        tick(done)
        key = ids[1]
        strata[key] = task_type
        env = CuratorEnv(setup)
        messages = opening(env.reset(game_ids=list(ids), task_type=task_type))
        # the same draw before and after training: a seed per held-out group and training seed
        draw = "canary|" + "|".join(ids[:2]) + (f"|{cfg.training.seed}" if cfg.training.seed else "")
        torch.manual_seed(int(hashlib.sha256(draw.encode()).hexdigest()[:8], 16))
        failed = None  # the turn the curator could not answer at: the positions after it are unmeasured
        for turn in range(size - 1):
            try:
                reply = chat.chat(messages, tools=TOOL_SURFACES["curate_and_advance"])
            except BackendError:
                failed = turn
                break
            call = next((c for c in reply.tool_calls if c["name"] == "curate_and_advance"
                         and isinstance(c["arguments"], dict)), None)
            operations = (call or {}).get("arguments", {}).get("operations") or []
            operations = operations if isinstance(operations, list) else []
            names = ([o.get("new_name") or o.get("skill_name") for o in operations if isinstance(o, dict)]
                     or ["(nothing)"]) if call \
                else ["(no call)"]
            restated["of"] += 1
            restated["right"] += (reply.text or "").strip() == said_type(task_type)
            counts = written[task_type].setdefault(f"turn {turn + 1}", {})
            for name in names:
                counts[str(name)] = counts.get(str(name), 0) + 1
            said_to = told[task_type].setdefault(f"turn {turn + 1}", {})
            if call is None:
                said_to["(no call)"] = said_to.get("(no call)", 0) + 1
                break  # a turn with no call ends the rollout, as TRL's loop ends it (finish plays the rest)
            answer = env.curate_and_advance(operations)
            heard = telling(shown(env))
            said_to[heard] = said_to.get(heard, 0) + 1
            messages = messages + [{"role": "assistant", "content": reply.text or "", "tool_calls": [
                {"id": f"call_{turn}", "type": "function", "function": call}]},
                {"role": "tool", "name": "curate_and_advance", "content": answer}]
        positions = finish(env).positions
        outcomes[key] = positions[1] if failed is None or failed >= 1 else None
        later[key] = positions[2] if size > 2 and (failed is None or failed >= 2) else None
    tick(len(groups))
    return outcomes, {"position_3": later, "strata": strata, "written": written, "told": told, "restated": restated}


def telling(skills) -> str:
    """What `skills`, in the order the executor retrieves them (an earlier skill's word stands),
    tell the reading executor for each transformation they name: the first instruction of that
    verb with a place, where the executor goes and what it avoids ("cool: fridge; heat: microwave",
    verbs sorted). The executor reads a skill's content; the name counts only in retrieval's order,
    and a sampled turn mixes the two skills' sentences under either name (measured), so the name
    alone misreports what a policy learned."""
    if not skills:
        return "(nothing)"
    verbs: dict = {}
    for skill in skills:
        for act in read_skill(skill).acts:
            if act.op in TRANSFORMS and act.op not in verbs and act.places and not act.negated:
                verbs[act.op] = act.places[0] + (f", not {', '.join(act.without)}" if act.without else "")
    return "; ".join(f"{verb}: {tool}" for verb, tool in sorted(verbs.items())) or "(no instruction)"


def shown(env) -> list:
    """The skills the executor got at the position played last (after a curator turn: the repo as
    the turn left it, rejected operations and all), in its retrieval order: read from the play."""
    state = state_of(env)
    return [state.repo.get(name) for name in state.retrieved[-1]]


def _rate(outcomes: dict, seen: dict) -> str:
    measured = [v for v in outcomes.values() if v is not None]
    types = ", ".join(f"{_short(t)}: " + ", ".join(f"{turn} {counts}" for turn, counts in by_turn.items())
                      for t, by_turn in seen["written"].items())
    said = seen["restated"]
    first = "; ".join(f"{_short(t)}: {by_turn.get('turn 1', {})}" for t, by_turn in seen["told"].items())
    return (f"{sum(measured)}/{len(measured)} won ({len(outcomes) - len(measured)} unmeasured); said the task's "
            f"type in {said['right']} of {said['of']} turns; wrote {types}; the first turn's skills told the "
            f"executor {first}")


def _short(task_type: str) -> str:
    """pick_heat_then_place_in_recep -> heat (the word a progress line needs)."""
    parts = task_type.split("_")
    return parts[1] if len(parts) > 1 else task_type


def _share(outcomes: dict) -> str:
    measured = [v for v in outcomes.values() if v is not None]
    return f"{sum(measured)}/{len(measured)} won ({len(outcomes) - len(measured)} unmeasured)"


CANARY = CuratorCanary()
