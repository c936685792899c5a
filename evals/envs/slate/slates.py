"""The skill slate (SkillGate): each task comes with `skillgate.slate_size` skills (16 by default,
as the method's slates) in four categories — one oracle, relevant ones (helpful, not the one the
task needs), misleading ones (plausible for the task, wrong in their body) and irrelevant ones —
and the executor decides what to read (evals/envs/slate/skills.py says what each category is).

A slate is built deterministically from a skill folder and the task: the oracle is the skill
whose `metadata.task_type` is the task's; relevant skills list the task type under
`metadata.relevant_to`; misleading skills are built from the oracle by mutating its body
(`with_misleading`: wrong order, wrong receptacle, wrong tool) under names in the oracle's
pattern and the oracle's own description, and on each slate the oracle and those skills trade
names (`Slate.aliases`), so no name is the oracle's by rote and the listing alone does not tell
them from the oracle (each snapshot's manifest carries a listing audit: how often a rule over
names, descriptions, the scene text or the listing's structure picks the oracle,
evals/envs/slate/audit.py);
irrelevant ones carry neither. Each category is drawn, and the slate shown, in an
order seeded by hashlib from (seed, game id). A run freezes its slates (`freeze`): the skill
files (the built misleading ones included) are copied into a snapshot folder and a manifest
records every slate, every file's hash and the categories' counts, so the eval protocol can pin
the snapshot (evals/protocol.py).

The executor sees only the names and descriptions (`slate_listing`) and reads a skill with
`read_skill(name)`. Training and evaluation play the same episode: `SlateEnv` is the TRL
`environment_factory` form (the model under training is the executor; its tools are
`read_skill` and `act`, and each action goes through `skillos.evals.runner.take_action`, the
step `play` uses), and `SlateRetriever` hands the slate to `runner.play` for a model executor
(evals/envs/slate/executor.py). Every read is recorded in order; `locate_reads` in
training/selector/credit.py gives each its token positions.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from skillos.errors import SkillosError
from skillos.repo import SkillRepo
from skillos.repo.retrieval import Hit
from skillos.files import write_atomic

from skillos.evals.envs.alfworld.scenes import load_scene, receptacle_type
from skillos.evals.envs.slate.skills import CATEGORIES, derived_from, misleading_for, misleading_skills, relevant_to
from skillos.config.derived import relative_to_config
from skillos.evals.envs.registry import environment
from skillos.evals.envs.slate.audit import listing_audit
from skillos.evals.runner import ENGINE_LOCK, take_action

READ_TOOL = "read_skill"
REASONING_OPEN, REASONING_CLOSE = "<skill_reasoning>", "</skill_reasoning>"
MANIFEST = "manifest.json"
SLATE_INSTRUCTIONS = (
    "Before acting you may read skills from the slate below. Think about which one fits the task "
    f"inside {REASONING_OPEN}...{REASONING_CLOSE}, then call read_skill(name) for the skill you "
    "choose (reading the wrong skill can mislead you), then play with act(command).")
# The no_skill profile: GRPO on the same games with no slate (the read tool answers that none is
# there), the method's no-skill baseline.
NO_SKILL_INSTRUCTIONS = "There are no skills to read for this task. Play with act(command)."
NO_SLATE = "No skills are available."


SYSTEM = ("You are an agent in a household text game. You choose which skill to read, then play "
          "with act(command), one admissible action per call.")


def first_input(slate_text: str, observation: str, admissible) -> str:
    """The executor's first user turn after the instructions: slate, scene, admissible actions
    (training's reset and the eval executor render it with this one function)."""
    return "\n".join([slate_text, "", observation.strip(), "", "Admissible actions: " + ", ".join(admissible)])


def step_result(observation: str, won: bool, admissible) -> str:
    """What an act() call returns, in training and in eval."""
    return observation.strip() + ("\nYou won." if won else "\nAdmissible actions: " + ", ".join(admissible))


@dataclass(frozen=True)
class Slate:
    game_id: str
    task_type: str
    oracle: str
    misleading: tuple
    irrelevant: tuple
    order: tuple  # the names in the order the executor sees them
    relevant: tuple = ()
    # The slate-local naming layer: (name shown, skill it is) for each oracle or built misleading
    # skill shown under another's name. The oracle and the skills built from it trade names
    # per slate, so no name is the oracle's by rote (every name above is as shown).
    aliases: tuple = ()

    def role(self, name: str) -> str | None:
        """The category of `name` on this slate (CATEGORIES), None for a name not on it."""
        if name == self.oracle:
            return "oracle"
        for category in ("relevant", "misleading", "irrelevant"):
            if name in getattr(self, category):
                return category
        return None

    def source(self, name: str) -> str:
        """The skill that `name`, as shown on this slate, is."""
        return dict(self.aliases).get(name, name)

    def skill(self, repo: SkillRepo, name: str):
        """The skill shown as `name` on this slate, under that name (None: not on the slate)."""
        if name not in self.order and name != self.oracle:
            return None
        skill = repo.get(self.source(name))
        return skill if skill is None or skill.name == name else replace(skill, name=name)

    def skills(self, repo: SkillRepo) -> list:
        """The slate's skills as the executor sees them, in its order."""
        return [self.skill(repo, name) for name in self.order]

    def without_oracle(self) -> "Slate":
        """The same slate with the oracle left out (hybrid_slate's paired twin)."""
        return replace(self, order=tuple(n for n in self.order if n != self.oracle))

    def counts(self) -> dict:
        return {"oracle": int(self.oracle in self.order), "relevant": len(self.relevant),
                "misleading": len(self.misleading), "irrelevant": len(self.irrelevant)}


@dataclass
class Read:
    """One read_skill call: the name asked for, its role on the slate (None: not on it), its
    place among the episode's reads, and (after `locate_reads`) its token span."""

    name: str
    role: str | None
    index: int
    token_start: int | None = None
    token_end: int | None = None


def task_type_of(skill) -> str | None:
    meta = skill.extra.get("metadata") or {}
    return meta.get("task_type") if isinstance(meta, dict) else None


def _ranked(names, *parts) -> list[str]:
    """`names` in an order seeded by hashlib from `parts` (never hash(): stable across runs)."""
    def key(name):
        return hashlib.sha256("|".join(map(str, (*parts, name))).encode()).hexdigest()
    return sorted(names, key=key)


def category_pools(repo: SkillRepo, task_type: str) -> dict[str, list[str]]:
    """The names each category of a `task_type` slate is drawn from (the repo must already hold
    the built misleading skills: `with_misleading`)."""
    pools: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    for skill in repo.skills:
        if task_type_of(skill) == task_type:
            pools["oracle"].append(skill.name)
        elif misleading_for(skill) is not None:
            if misleading_for(skill) == task_type:
                pools["misleading"].append(skill.name)
        elif task_type in relevant_to(skill):
            pools["relevant"].append(skill.name)
        elif task_type_of(skill) is None and not relevant_to(skill):
            pools["irrelevant"].append(skill.name)
    return pools


def build_slate(repo: SkillRepo, game, n_relevant: int, n_misleading: int, n_irrelevant: int, seed: int) -> Slate:
    """One game's slate: the oracle and `n_*` skills of each other category, drawn and ordered by
    hashlib from (seed, game id). `repo` holds the built misleading skills (`with_misleading`)."""
    pools = category_pools(repo, game.task_type)
    if not pools["oracle"]:
        raise SkillosError(f"slate for game {game.id}: no skill in {repo.root} has metadata.task_type "
                           f"{game.task_type!r} (a slate needs an oracle)")
    for category, n in (("relevant", n_relevant), ("misleading", n_misleading), ("irrelevant", n_irrelevant)):
        if len(pools[category]) < n:
            where = {"relevant": "skills listing it under metadata.relevant_to",
                     "misleading": "misleading skills built from its oracle",
                     "irrelevant": "skills with no task_type and no relevant_to"}[category]
            raise SkillosError(f"slate for game {game.id}: {n} {category} skills needed for {game.task_type}, "
                               f"{repo.root} has {len(pools[category])} ({where}); add skills or change the "
                               "skillgate slate sizes")
    oracle = _ranked(pools["oracle"], seed, game.id, "oracle")[0]
    relevant = tuple(_ranked(pools["relevant"], seed, game.id, "relevant")[:n_relevant])
    misleading = tuple(_ranked(pools["misleading"], seed, game.id, "misleading")[:n_misleading])
    irrelevant = tuple(_ranked(pools["irrelevant"], seed, game.id, "irrelevant")[:n_irrelevant])
    # the oracle and the skills built from it share its name pattern; shown under one another's
    # names, drawn per slate, no name is the oracle's across slates (a folder's own misleading
    # skills, such as another type's oracle, keep theirs)
    alike = [oracle, *(n for n in misleading if derived_from(repo.get(n)) in pools["oracle"])]
    shown = dict(zip(alike, _ranked(alike, seed, game.id, "names")))
    oracle, misleading = shown[oracle], tuple(shown.get(n, n) for n in misleading)
    order = tuple(_ranked((oracle, *relevant, *misleading, *irrelevant), seed, game.id, "order"))
    aliases = tuple(sorted((name, source) for source, name in shown.items() if name != source))
    return Slate(game.id, game.task_type, oracle, misleading, irrelevant, order, relevant, aliases)


def with_misleading(repo: SkillRepo, n_misleading: int) -> SkillRepo:
    """A copy of `repo` (same root, nothing written) holding, for every task type it has an
    oracle for, `n_misleading` misleading skills: the folder's own (`metadata.misleading_for`
    that type, e.g. another type's oracle, which misleads by being right for the other task),
    then as many as they lack built from the type's oracle (skills.py). A built name that is
    already a skill of the folder is a one-line error."""
    built = []
    for task_type in sorted({t for s in repo.skills if (t := task_type_of(s))}):
        oracle = sorted(s.name for s in repo.skills if task_type_of(s) == task_type)[0]
        brought = sum(misleading_for(s) == task_type for s in repo.skills)
        built += misleading_skills(repo.get(oracle), task_type, max(0, n_misleading - brought))
    clash = next((s.name for s in built if s.name in repo), None)
    if clash:
        raise SkillosError(f"slate: {repo.root} has a skill named {clash!r}, the name of a built misleading skill; "
                           "rename it")
    out = SkillRepo(None, repo.skills + built)
    out.root = repo.root
    return out


def tasks_of(games) -> dict:
    """{game id: task sentence} of the games that have one (the listing audit's queries)."""
    return {g.id: g.task for g in games if getattr(g, "task", None)}


def scenes_of(games) -> dict:
    """{game id: the receptacle types its room's scene text lists, as words} of the games played
    in a known floor plan (the listing audit's scene-text rule)."""
    return {g.id: sorted({receptacle_type(r).lower() for r in load_scene(g.plan).receptacles})
            for g in games if isinstance(getattr(g, "plan", None), int)}


def slate_sizes(cfg) -> tuple[int, int, int]:
    """(relevant, misleading, irrelevant) of the config's slates."""
    g = cfg.skillgate
    return g.n_relevant, g.n_misleading, g.n_irrelevant


def build_slates(cfg, games, source: SkillRepo | None = None) -> tuple[SkillRepo, list[Slate]]:
    """The config's slates for `games` and the repo they are drawn from (the slate folder plus
    the built misleading skills)."""
    g = cfg.skillgate
    if source is None:
        if not g.slate_repo:
            raise SkillosError("skillgate.slate_repo: a slate needs a skill folder")
        source = SkillRepo.load(relative_to_config(cfg, g.slate_repo))
    repo = with_misleading(source, g.n_misleading)
    return repo, [build_slate(repo, game, *slate_sizes(cfg), cfg.env.seed) for game in games]


def composition(slates) -> dict:
    """What a report says of its slates: how many, their sizes, and each category's count per
    slate and in total."""
    per = [s.counts() for s in slates]
    sizes = sorted({len(s.order) for s in slates})
    return {"slates": len(per), "size": sizes[0] if len(sizes) == 1 else sizes,
            "per_slate": per[0] if per and all(p == per[0] for p in per) else None,
            "total": {c: sum(p[c] for p in per) for c in CATEGORIES}}


def missing_oracles(repo: SkillRepo, task_types) -> list[str]:
    """The task types no skill of `repo` is the oracle for (the train gate refuses them)."""
    have = {task_type_of(s) for s in repo.skills}
    return [t for t in task_types if t not in have]


def slate_listing(slate: Slate, repo: SkillRepo) -> str:
    """What the executor sees of the slate: names and descriptions, never bodies."""
    return listing(slate.skills(repo))


def listing(skills) -> str:
    return "\n".join(["Skill slate (read one with read_skill):"] + [f"- {s.name}: {s.description}" for s in skills])


def manifest_of(repo: SkillRepo, slates: list[Slate], tasks: dict | None = None, scenes: dict | None = None) -> dict:
    """The manifest of a snapshot (computed, not written): every slate and skill file's hash,
    the `snapshot_hash` that pins them in an eval spec, and the listing audit of the slates
    against `tasks` (game id -> task sentence; without them the audit is unmeasured) and
    `scenes` (game id -> the words its scene text lists: `scenes_of`)."""
    names = sorted({s.source(n) for s in slates for n in s.order})  # the skill files, as built
    files = {name: hashlib.sha256(repo.get(name).to_markdown().encode()).hexdigest() for name in names}
    slate_rows = {s.game_id: {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(s).items()}
                  for s in slates}
    digest = hashlib.sha256(json.dumps({"files": files, "slates": slate_rows}, sort_keys=True).encode())
    built = {name: (repo.get(name).extra.get("metadata") or {}) for name in names
             if misleading_for(repo.get(name)) is not None}
    return {"source": str(repo.root), "snapshot_hash": digest.hexdigest()[:16], "files": files,
            "slates": slate_rows, "composition": composition(slates), "misleading": built,
            "listing_audit": listing_audit(repo, slates, tasks or {}, scenes)}


def freeze(repo: SkillRepo, slates: list[Slate], out_dir: str | Path, tasks: dict | None = None,
           scenes: dict | None = None) -> dict:
    """Copy the slates' skills into `out_dir/skills` and write the manifest (atomically);
    return the manifest. `tasks` (game id -> task sentence) and `scenes` feed its listing audit."""
    out = Path(out_dir)
    manifest = manifest_of(repo, slates, tasks, scenes)
    for name in manifest["files"]:
        write_atomic(out / "skills" / name / "SKILL.md", repo.get(name).to_markdown())
    write_atomic(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def load_frozen(out_dir: str | Path) -> tuple[SkillRepo, dict[str, Slate], dict]:
    """A frozen snapshot back: its skills, its slates by game id, its manifest."""
    out = Path(out_dir)
    try:
        from skillos.safety import read_json_file

        manifest = read_json_file(out / MANIFEST, "slate manifest")
    except (OSError, ValueError, SkillosError) as exc:
        raise SkillosError(f"{out / MANIFEST}: not a frozen slate snapshot ({exc})") from None
    repo = SkillRepo.load(out / "skills")
    slates = {gid: Slate(**{k: tuple(map(tuple, v)) if k == "aliases" else tuple(v) if isinstance(v, list) else v
                            for k, v in row.items()})
              for gid, row in manifest["slates"].items()}
    manifest.setdefault("composition", composition(list(slates.values())))
    return repo, slates, manifest


class SlateRetriever:
    """`runner.play`'s retriever for one game: its slate, in the order the executor sees it."""

    def __init__(self, repo: SkillRepo, slate: Slate):
        self.hits = [Hit(skill, 0.0) for skill in slate.skills(repo)]

    def search(self, query: str, k: int) -> list[Hit]:
        return self.hits  # the whole slate, whatever k: the slate is the protocol


# -- the TRL environment ----------------------------------------------------------------------

@dataclass
class SlateSetup:
    """What every rollout of a selector run shares: the frozen slates, their skills, the games.
    `no_slate` (the no_skill profile): the executor plays with no slate. `oracle_only` (the
    oracle-grpo start's GRPO): the slate shows the oracle alone. `paired` (hybrid_slate):
    environments alternate by their place in the batch (TRL hands pool instance k to rollout k
    of every batch): even ones show the slate, odd ones its twin without the oracle."""

    games: dict  # game id -> Game (train split only)
    repo: SkillRepo
    slates: dict  # game id -> Slate
    make_env: object  # () -> a fresh game env
    max_steps: int  # env.max_steps, from the config (no second default)
    no_slate: bool = False
    oracle_only: bool = False
    paired: bool = False
    slots: object = field(default_factory=itertools.count)  # each SlateEnv's place in TRL's pool
    listing_audit: dict | None = None  # the frozen snapshot's listing audit (audit.py)


@dataclass
class _Episode:
    game: object
    slate: Slate  # the slate as built (its oracle, its categories)
    shown: tuple = ()  # the names the executor sees (none for no_skill, no oracle for a hybrid twin)
    obs: object = None
    reads: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    won: bool | None = False
    unmeasured_reason: str | None = None


class SlateEnv:
    """One task with its slate. Public methods are TRL's tools: `read_skill` and `act`."""

    def __init__(self, setup: SlateSetup):
        self._setup = setup
        self._env = setup.make_env()
        self._episode: _Episode | None = None
        self._slot = next(setup.slots)

    @property
    def with_oracle(self) -> bool:
        """Whether this environment shows the oracle (False: a hybrid_slate twin, or no slate)."""
        return not self._setup.no_slate and not (self._setup.paired and self._slot % 2)

    def reset(self, **row) -> str:
        game_id = row["game_id"]
        if game_id not in self._setup.games:  # the held-out split is never in the setup
            raise KeyError(f"game {game_id!r} is not in the training pool")
        game, slate = self._setup.games[game_id], self._setup.slates[game_id]
        shown = (() if self._setup.no_slate else (slate.oracle,) if self._setup.oracle_only
                 else slate.order if self.with_oracle else slate.without_oracle().order)
        self._episode = ep = _Episode(game, slate, shown)
        try:
            with ENGINE_LOCK:
                self._env.load(game.path)
                ep.obs = self._env.reset()
        except Exception as exc:  # noqa: BLE001 - an env that fails is unmeasured, not a loss
            ep.won, ep.unmeasured_reason = None, f"{type(exc).__name__}: {exc}"[:300]
            return "error: the game could not be loaded"
        listing_text = listing([slate.skill(self._setup.repo, n) for n in shown]) if shown else NO_SLATE
        return first_input(listing_text, ep.obs.text, ep.obs.admissible)

    def read_skill(self, name: str) -> str:
        """Read one skill of the slate.

        Args:
            name: The skill's name, as the slate lists it.

        Returns:
            The skill's instructions, or why it cannot be read.
        """
        ep = self._episode
        if ep is None:
            return "error: no episode in progress (reset was not called)"
        shown = name in ep.shown
        ep.reads.append(Read(name, ep.slate.role(name) if shown else None, len(ep.reads)))
        if not ep.shown:
            return "error: there is no slate for this task"
        if not shown:
            return f"error: {name!r} is not on the slate"
        skill = ep.slate.skill(self._setup.repo, name)
        return f"{skill.name}: {skill.description}\n{skill.body}".strip()

    def act(self, command: str) -> str:
        """Take one action in the household game.

        Args:
            command: One of the admissible actions.

        Returns:
            What the game says back, and the actions now admissible.
        """
        ep = self._episode
        if ep is None or ep.obs is None:
            return "error: no game in progress"
        if ep.won or len(ep.steps) >= self._setup.max_steps:
            return "The episode is over."
        try:
            ep.obs = take_action(self._env, ep.obs, command, ep.steps)
        except Exception as exc:  # noqa: BLE001
            ep.won, ep.unmeasured_reason = None, f"{type(exc).__name__}: {exc}"[:300]
            return "error: the game failed"
        ep.won = bool(ep.obs.won)
        return step_result(ep.obs.text, ep.won, ep.obs.admissible)


def tool_schemas() -> list[dict]:
    """The JSON schemas TRL builds from SlateEnv's tools (in its order): the eval executor and
    the warm-up use exactly these, so a checkpoint is evaluated on the surface it trained on."""
    from transformers.utils import get_json_schema

    env = SlateEnv.__new__(SlateEnv)
    return [get_json_schema(getattr(env, name)) for name in ("act", READ_TOOL)]


def admissible(env: SlateEnv) -> list:
    """The commands the env's current episode admits now (a function, not a public member: the
    environment's public methods are the selector's tools)."""
    return env._episode.obs.admissible


def episode_record(env: SlateEnv) -> dict:
    """The measured outcome and selection evidence of an env's episode (None: unmeasured)."""
    ep = env._episode
    if ep is None:
        return {"success": None, "unmeasured_reason": "no episode", "reads": [], "oracle": None}
    return {"success": ep.won, "unmeasured_reason": ep.unmeasured_reason, "game_id": ep.game.id,
            "reads": [r.name for r in ep.reads], "read_roles": [r.role for r in ep.reads],
            "oracle": ep.slate.oracle, "slate": list(ep.shown), "with_oracle": env.with_oracle,
            "steps": len(ep.steps)}


def make_slate_setup(cfg, games, out_dir: str | Path) -> SlateSetup:
    """Build and freeze a run's slates (into out_dir/slate) from `skillgate.slate_repo`; the
    profile (`skillgate.selector_credit`) says whether rollouts see no slate (no_skill) or
    alternate with the oracle's twin (hybrid_slate)."""
    g = cfg.skillgate
    if not g.slate_repo:
        raise SkillosError("skillgate.slate_repo: the selector trainer needs a slate skill folder")
    repo, slates = build_slates(cfg, games)
    manifest = freeze(repo, slates, Path(out_dir) / "slate", tasks_of(games), scenes_of(games))
    return SlateSetup({x.id: x for x in games}, repo, {s.game_id: s for s in slates},
                      environment("slate").make_env, cfg.env.max_steps,
                      no_slate=g.selector_credit == "no_skill", paired=g.selector_credit == "hybrid_slate",
                      listing_audit=manifest["listing_audit"])


# -- selection metrics ------------------------------------------------------------------------

def _rate(numerator: int, denominator: int, none: str = "no measured episodes") -> dict:
    return {"value": numerator / denominator if denominator else None, "n": numerator,
            "of": denominator, **({} if denominator else {"reason": none})}


def clean_oracle(roles) -> bool:
    """Exactly one read of a skill of the slate, and it is the oracle (two reads of the oracle are
    not clean): reads of names not on the slate (role None) are no reads of a skill and are left out."""
    return [r for r in roles if r is not None] == ["oracle"]


FIRST_READ = (*CATEGORIES, "off_slate", "no_read")


def first_read(roles) -> str:
    """The category of an episode's first read (`off_slate`: a name not on the slate; `no_read`)."""
    return "no_read" if not roles else roles[0] or "off_slate"


def selection_metrics(rows: list[dict]) -> dict:
    """Per-arm selection metrics over episode rows (`success`, `reads`, `read_roles`, and
    optionally `selection_tokens` / `completion_tokens`), each with its denominator: the share of
    episodes that read a skill of each category (oracle / relevant / misleading / irrelevant) at
    all, read nothing, and what their first read was (`first_read`: the categories, off_slate,
    no_read; they sum to the measured episodes). Unmeasured episodes are out of every rate and
    counted. The oracle rates count only episodes shown the oracle (`with_oracle`, absent: shown):
    a hybrid_slate twin could not read it. Rows with `selects: False` (an executor handed every
    skill's body, such as the CPU one, which chooses nothing to read) leave every selection rate
    unmeasured, with the reason."""
    measured = [r for r in rows if r.get("success") is not None]
    n = len(measured)
    if any(r.get("selects") is False for r in measured):
        return _no_selection(rows, measured) | {"coerced_actions": _coerced(measured)}
    reads = sum(len(r["reads"]) for r in measured)
    # a hybrid_slate twin was shown no oracle: it cannot read one, so it is out of the oracle rates
    shown = [r for r in measured if r.get("with_oracle", True)]
    no_oracle = "no measured episode was shown the oracle"
    counted = [r for r in measured if r.get("completion_tokens")]
    sel_tokens = sum(r.get("selection_tokens") or 0 for r in counted)
    all_tokens = sum(r["completion_tokens"] for r in counted)
    return {
        "episodes": len(rows), "measured": n, "unmeasured": len(rows) - n,
        "success": _rate(sum(bool(r["success"]) for r in measured), n),
        "oracle_read": _rate(sum("oracle" in r["read_roles"] for r in shown), len(shown), no_oracle),
        "clean_oracle_read": _rate(sum(clean_oracle(r["read_roles"]) for r in shown), len(shown), no_oracle),
        "relevant_read": _rate(sum("relevant" in r["read_roles"] for r in measured), n),
        "misleading_read": _rate(sum("misleading" in r["read_roles"] for r in measured), n),
        "irrelevant_read": _rate(sum("irrelevant" in r["read_roles"] for r in measured), n),
        "no_read": _rate(sum(not r["reads"] for r in measured), n),
        "first_read": {c: _rate(sum(first_read(r["read_roles"]) == c for r in measured), n) for c in FIRST_READ},
        "reads_per_episode": {"value": reads / n if n else None, "n": reads, "of": n},
        "selection_token_share": {"value": sel_tokens / all_tokens if all_tokens else None,
                                  "n": sel_tokens, "of": all_tokens,
                                  **({} if all_tokens else {"reason": "no token counts recorded"})},
        "coerced_actions": _coerced(measured),
    }


def _coerced(measured: list[dict]) -> dict:
    """The actions of measured episodes that were not admissible and were coerced, of every action
    taken (rows without action counts, such as training's selection records: unmeasured)."""
    counted = [r for r in measured if isinstance(r.get("steps"), int) and isinstance(r.get("coerced_actions"), int)]
    actions, coerced = sum(r["steps"] for r in counted), sum(r["coerced_actions"] for r in counted)
    return {"value": coerced / actions if actions else None, "n": coerced, "of": actions,
            **({} if actions else {"reason": "no action counts recorded"})}


NO_SELECTION = "this executor is handed every skill of the slate and chooses none: it makes no selection to measure"
SELECTION_RATES = ("oracle_read", "clean_oracle_read", "relevant_read", "misleading_read", "irrelevant_read",
                   "no_read", "reads_per_episode", "selection_token_share")


def _no_selection(rows: list[dict], measured: list[dict]) -> dict:
    n = len(measured)
    none = {"value": None, "n": 0, "of": n, "reason": NO_SELECTION}
    return {"episodes": len(rows), "measured": n, "unmeasured": len(rows) - n,
            "success": _rate(sum(bool(r["success"]) for r in measured), n),
            **{k: dict(none) for k in SELECTION_RATES}, "first_read": {c: dict(none) for c in FIRST_READ}}


def render_metrics(arm: str, m: dict) -> str:
    def pct(x):
        return "unmeasured" if x["value"] is None else f"{x['value']:.0%} ({x['n']}/{x['of']})"

    rpe = m["reads_per_episode"]
    share = m["selection_token_share"]
    return (f"{arm}: success {pct(m['success'])}; oracle read {pct(m['oracle_read'])}; "
            f"relevant read {pct(m['relevant_read'])}; misleading read {pct(m['misleading_read'])}; "
            f"irrelevant read {pct(m['irrelevant_read'])}; no read {pct(m['no_read'])}; reads/episode "
            f"{'unmeasured' if rpe['value'] is None else format(rpe['value'], '.2f')} ({rpe['n']}/{rpe['of']}); "
            f"selection-token share {pct(share)}; coerced actions {pct(m['coerced_actions'])}; "
            f"unmeasured {m['unmeasured']} of {m['episodes']}")
