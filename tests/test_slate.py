"""SkillGate's skill slate: deterministic slates with an oracle, a frozen snapshot with its
manifest, the TRL environment's read records on the real ALFWorld engine, selection metrics
with denominators, the frozen eval protocol, and the gates that refuse a selector run."""

import dataclasses
import json
import shutil

import pytest
import yaml

from conftest import ROOT, run_cli

from skillos import config as cfgmod
from skillos.errors import SkillosError
from skillos.evals import protocol
from skillos.evals.envs.slate.slates import (SlateEnv, build_slate, build_slates, composition, episode_record,
                                             freeze, load_frozen, make_slate_setup, missing_oracles,
                                             selection_metrics, with_misleading)
from skillos.repo import SkillRepo

SLATES = ROOT / "training" / "configs" / "slates" / "household"
CPU = ROOT / "training" / "configs" / "selector-cpu.yaml"


class _Game:
    def __init__(self, gid, task_type):
        self.id, self.task_type = gid, task_type


def _built(n_misleading=5):
    return with_misleading(SkillRepo.load(SLATES), n_misleading)


def test_a_slate_has_one_oracle_and_is_the_same_every_time():
    repo = _built()
    game = _Game("train-0007", "pick_heat_then_place_in_recep")
    slate = build_slate(repo, game, 5, 5, 5, seed=0)
    # the oracle is the heat-then-place file, shown under a name of its pattern drawn for this slate
    assert slate.source(slate.oracle) == "heat-then-place" and len(slate.order) == 16
    assert slate.skill(repo, slate.oracle).body == repo.get("heat-then-place").body
    assert slate.skill(repo, slate.oracle).name == slate.oracle and slate.oracle.startswith("heat-then-")
    assert slate.counts() == {"oracle": 1, "relevant": 5, "misleading": 5, "irrelevant": 5}
    assert sorted(slate.order) == sorted((slate.oracle, *slate.relevant, *slate.misleading, *slate.irrelevant))
    assert build_slate(repo, game, 5, 5, 5, seed=0) == slate
    others = {build_slate(repo, game, 5, 5, 5, seed=s).order for s in range(6)}
    assert len(others) > 1  # the seed moves the draw and the order
    assert slate.role(slate.oracle) == "oracle" and slate.role("nope") is None and slate.skill(repo, "nope") is None
    assert {slate.role(n) for n in slate.order} == {"oracle", "relevant", "misleading", "irrelevant"}
    assert slate.without_oracle().order == tuple(n for n in slate.order if n != slate.oracle)


def test_the_oracle_and_its_look_alikes_trade_names_per_slate_so_no_name_is_the_oracles_by_rote():
    """Issue 60: each task type had one oracle name in train and held-out, so 'read this name'
    picked the oracle without reading the task. The oracle and the misleading skills built from
    it share one name pattern and one description, and trade names per slate: over 600 slates
    of one type every name of the pattern is the oracle's about 1 time in 6, each name shows the
    same body wherever it is listed only by chance, and a rule learned from one split's names
    picks the oracle on the other's about as often as chance."""
    from collections import Counter

    repo = _built()
    heat = [build_slate(repo, _Game(f"g{i}", "pick_heat_then_place_in_recep"), 5, 5, 5, seed=3) for i in range(600)]
    shown = Counter(s.oracle for s in heat)
    assert len(shown) == 6 and all(70 <= n <= 130 for n in shown.values()), shown
    assert all(n.startswith("heat-then-") for s in heat for n in (s.oracle, *s.misleading))
    # the oracle and the skills built from it list one description: a listing tells nothing of the body
    built = [s for s in repo.skills if s.extra.get("metadata", {}).get("derived_from") == "heat-then-place"]
    assert {s.skill(repo, n).description for s in heat for n in (s.oracle, *s.misleading)} == {
        repo.get("heat-then-place").description} and len(built) == 5
    # the name shown with the oracle's body is drawn per slate; the bodies do not move with the names
    assert {s.skill(repo, s.oracle).body for s in heat} == {repo.get("heat-then-place").body}
    train, held_out = heat[:300], heat[300:]
    rote = Counter(s.oracle for s in train).most_common(1)[0][0]
    hits = sum(s.oracle == rote for s in held_out)
    assert hits <= 0.2 * len(held_out), (rote, hits)
    # a folder's own misleading skill (another type's oracle, as the canary's) keeps its name
    canary = with_misleading(SkillRepo.load(ROOT / "training" / "configs" / "slates" / "canary"), 1)
    one = build_slate(canary, _Game("g", "pick_heat_then_place_in_recep"), 0, 1, 2, seed=0)
    assert (one.oracle, one.misleading, one.aliases) == ("heat-then-place", ("cool-then-place",), ())


# One task sentence of each type, as ALFWorld writes them.
TASKS = {"pick_heat_then_place_in_recep": "heat some egg and put it in diningtable",
         "pick_cool_then_place_in_recep": "cool some pan and put it in stoveburner",
         "pick_clean_then_place_in_recep": "clean some apple and put it in sidetable",
         "look_at_obj_in_light": "look at bowl under the desklamp",
         "pick_two_obj_and_place": "put two saltshaker in drawer",
         "pick_and_place_simple": "put a keychain in sofa"}


def test_every_task_type_gets_a_16_skill_slate_with_all_four_categories():
    """The method's slates from the shipped folder: for every task type 1 oracle, 5 relevant,
    5 misleading built from the oracle whose names and descriptions carry the task type's
    tell-tale words as the oracle's do and whose bodies differ from it, 5 irrelevant."""
    from skillos.evals.envs.alfworld.scenes import TASK_TYPES
    from skillos.evals.envs.slate.skills import TELLTALE, relevant_to, telltale_words

    cfg = cfgmod.load(ROOT / "training" / "configs" / "selector-gpu-clean-oracle.yaml")
    assert (cfg.skillgate.slate_size, cfg.skillgate.n_relevant) == (16, 5)
    repo, slates = build_slates(cfg, [_Game(f"g{i}", t) for i, t in enumerate(TASK_TYPES)])
    assert set(TELLTALE) == set(TASK_TYPES) == {s.task_type for s in slates}
    for slate in slates:
        oracle = slate.skill(repo, slate.oracle)
        assert len(slate.order) == 16 == len(set(slate.order)), slate.task_type
        assert slate.counts() == {"oracle": 1, "relevant": 5, "misleading": 5, "irrelevant": 5}
        assert telltale_words(f"{oracle.name} {oracle.description}", slate.task_type)  # the oracle's name tells
        bodies = set()
        for name in slate.misleading:
            skill = slate.skill(repo, name)
            meta = skill.extra["metadata"]
            assert meta["misleading_for"] == slate.task_type and meta["derived_from"] == slate.source(slate.oracle)
            assert telltale_words(f"{skill.name} {skill.description}", slate.task_type), name
            assert skill.body.strip() != oracle.body.strip()
            bodies.add(skill.body)
        assert len(bodies) == 5  # five different mutations
        assert all(slate.task_type in relevant_to(repo.get(n)) for n in slate.relevant)
        assert all(not repo.get(n).extra for n in slate.irrelevant)
    assert composition(slates)["total"] == {"oracle": 6, "relevant": 30, "misleading": 30, "irrelevant": 30}


class _Task(_Game):
    def __init__(self, gid, task_type, task, plan=None):
        super().__init__(gid, task_type)
        self.task, self.plan = task, plan


def _tasks(n, seed):
    """`n` games over the six task types with task sentences from ALFWorld's own templates, each
    in a floor plan of a room ALFWorld sets that task in (its scene text is that room's)."""
    import random

    from skillos.evals.envs.alfworld import scenes
    from skillos.evals.envs.alfworld.scenes import TASK_TYPES

    rng, library = random.Random(seed), scenes.goal_library()
    objects, places = ("egg", "mug", "apple", "pencil", "book", "plate"), ("diningtable", "shelf", "desk", "sofa")
    rooms = scenes.constants().GOALS_VALID
    plans = {t: [p for p in scenes.all_plans() if scenes.room_of(p) in rooms[t]] for t in TASK_TYPES}
    return [_Task(f"t{seed}-{i}", t, rng.choice(library[t]["templates"]).format(
        obj=rng.choice(objects), recep=rng.choice(places), toggle=rng.choice(("desklamp", "floorlamp"))),
        rng.choice(plans[t]))
        for i, t in enumerate(TASK_TYPES * (n // len(TASK_TYPES)))]


# The task types that transform an object with an appliance, and the appliance.
TRANSFORMS = {"pick_heat_then_place_in_recep": "microwave", "pick_cool_then_place_in_recep": "fridge",
              "pick_clean_then_place_in_recep": "sinkbasin"}


def test_a_rule_over_the_listing_alone_does_not_find_the_oracle():
    """The listing audit's six rules (BM25 and keyword overlap with the task sentence, keyword
    overlap with the room's scene text, the name rule learned on the other half's slates, and the
    repeat and center rules over the listing's structure) pick the oracle in no more than 1 slate
    in 5 beyond chance variation, on the shipped folder and every task type on its own. Each rule
    can fail: misleading listings that hide the task's words (as they once did) fail the lexical
    rules; one oracle name per task type (as it once was) fails the name rule; an oracle alone in
    naming the room's appliance fails the scene rule; listings one edit from the oracle's, with
    its own line kept by some (as they once were), fail the repeat rule."""
    from skillos.evals.envs.slate.audit import BAR, MATCHERS, listing_audit, render
    from skillos.evals.envs.slate.slates import scenes_of
    from skillos.repo.skill import Skill

    cfg = cfgmod.load(ROOT / "training" / "configs" / "selector-gpu-clean-oracle.yaml")
    games = _tasks(48, seed=7)
    repo, slates = build_slates(cfg, games)
    tasks, scenes = {g.id: g.task for g in games}, scenes_of(games)
    assert len(scenes) == 48 and "microwave" in scenes[games[0].id]  # a heat task's kitchen names its microwave
    audit = listing_audit(repo, slates, tasks, scenes)
    assert audit["passes"] is True and audit["slates"] == 48, render(audit)
    for matcher in MATCHERS:
        assert audit[matcher]["oracle"]["value"] <= BAR, render(audit)
        assert sum(audit[matcher][c]["n"] for c in ("oracle", "relevant", "misleading", "irrelevant")) == pytest.approx(48, abs=0.01)
    # the six look-alikes list one line: the structure rules share each slate's pick among them (ties
    # exact, not broken by float sums), 1 in 6
    assert audit["repeat"]["oracle"]["n"] == audit["center"]["oracle"]["n"] == 8, render(audit)
    for task_type in {g.task_type for g in games}:
        one = listing_audit(repo, [s for s in slates if s.task_type == task_type], tasks, scenes)
        assert one["passes"] is True, (task_type, render(one))
    # in every heat, cool and clean slate the misleading skills name the appliance its room's scene names,
    # as the oracle does (the oracle was once the only one): they list the oracle's line
    for slate in slates:
        tool = TRANSFORMS.get(slate.task_type)
        if tool and tool in scenes[slate.game_id]:
            assert tool in slate.skill(repo, slate.oracle).description
            assert all(slate.skill(repo, n).description == slate.skill(repo, slate.oracle).description
                       for n in slate.misleading), slate.game_id
    # control 1: the same bodies under names and descriptions that avoid the task's words
    hidden = SkillRepo(None, [Skill(f"routine-{i}", "Steps for getting an item ready and setting it down.", s.body,
                                    s.extra) if s.name in {sl.source(n) for sl in slates for n in sl.misleading} else s
                              for i, s in enumerate(repo.skills)])
    renamed = {s.name: f"routine-{i}" for i, s in enumerate(repo.skills)}
    moved = [dataclasses.replace(sl, misleading=tuple(renamed[sl.source(n)] for n in sl.misleading), aliases=(),
                                 oracle=sl.source(sl.oracle),
                                 order=tuple(renamed[sl.source(n)] if n in sl.misleading else sl.source(n)
                                             for n in sl.order)) for sl in slates]
    control = listing_audit(hidden, moved, tasks, scenes)
    assert control["passes"] is False and control["bm25"]["oracle"]["value"] > 0.5, render(control)
    assert "bm25" in control["why"] and "/48" in render(control)
    # control 2: the layout before the naming layer, each task type's oracle under its own name on every slate
    fixed = [dataclasses.replace(sl, aliases=(), oracle=sl.source(sl.oracle),
                                 misleading=tuple(sl.source(n) for n in sl.misleading),
                                 order=tuple(sl.source(n) for n in sl.order)) for sl in slates]
    rote = listing_audit(repo, fixed, tasks, scenes)
    assert rote["name"]["oracle"]["value"] == 1.0 and rote["passes"] is False and "name" in rote["why"]
    # control 3: misleading listings that name the task's verb but no appliance leave the oracle alone
    # in naming the verb and the room's appliance (as the misleading listings once did)
    bare = SkillRepo(None, [Skill(s.name, "Steps for it.", s.body, s.extra)
                            if s.name in {sl.source(n) for sl in slates for n in sl.misleading} else s for s in repo.skills])
    kitchens = [sl for sl in slates if sl.task_type in ("pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep")]
    alone = listing_audit(bare, kitchens, tasks, scenes)
    assert alone["scene"]["oracle"]["value"] > 0.9 and "scene" in alone["why"], render(alone)
    # control 4: each misleading listing one edit from the oracle's, the wrong-place ones keeping its line
    # (as they once did): the oracle is their center, and its line the one listed twice
    edited = SkillRepo(None, [Skill(s.name, s.description if s.extra["metadata"]["mutation"].startswith("wrong-place")
                                    else f"{s.description} ({s.extra['metadata']['mutation']})", s.body, s.extra)
                              if s.name in {sl.source(n) for sl in slates for n in sl.misleading} else s
                              for s in repo.skills])
    transforms = [sl for sl in slates if sl.task_type in TRANSFORMS]
    centered = listing_audit(edited, transforms, tasks, scenes)
    assert centered["repeat"]["oracle"]["value"] == 0.5 and "repeat" in centered["why"], render(centered)
    assert centered["center"]["oracle"]["value"] > 0.2, render(centered)


def test_the_listing_audit_shares_ties_and_is_unmeasured_without_task_sentences(tmp_path):
    from skillos.evals.envs.slate.audit import listing_audit, top_shares
    from skillos.evals.envs.slate.slates import Slate
    from skillos.repo.skill import Skill

    repo = SkillRepo(None, [Skill("heat-a", "Heat it.", "1. x"), Skill("heat-b", "Heat it.", "1. y"),
                            Skill("fold", "Fold laundry.", "z")])
    slate = Slate("g", "pick_heat_then_place_in_recep", "heat-a", ("heat-b",), ("fold",), ("fold", "heat-b", "heat-a"))
    for matcher in ("bm25", "keyword"):  # the two heat skills tie: the oracle gets half a pick
        assert top_shares(matcher, slate, repo, "heat some egg") == {"oracle": 0.5, "relevant": 0.0,
                                                                       "misleading": 0.5, "irrelevant": 0.0}
    unmeasured = listing_audit(repo, [slate], {})
    assert unmeasured["passes"] is None and unmeasured["slates"] == 0 and "no task sentences" in unmeasured["why"]
    # a frozen snapshot carries its audit; without task sentences it says why it is unmeasured
    assert freeze(repo, [slate], tmp_path / "s", {"g": "heat some egg"})["listing_audit"]["slates"] == 1
    assert freeze(repo, [slate], tmp_path / "t")["listing_audit"]["passes"] is None


def test_a_twin_shown_no_oracle_is_out_of_the_oracle_rates():
    rows = [{"success": True, "reads": ["o"], "read_roles": ["oracle"], "with_oracle": True},
            {"success": False, "reads": ["m"], "read_roles": ["misleading"], "with_oracle": False},
            {"success": False, "reads": [], "read_roles": [], "with_oracle": False}]
    m = selection_metrics(rows)
    assert m["oracle_read"] == {"value": 1.0, "n": 1, "of": 1} and m["clean_oracle_read"]["of"] == 1
    assert m["misleading_read"] == {"value": 1 / 3, "n": 1, "of": 3}  # every other rate: all measured
    twins = selection_metrics(rows[1:])
    assert twins["oracle_read"]["value"] is None and "shown the oracle" in twins["oracle_read"]["reason"]


def test_the_telltale_check_catches_inflections_and_nothing_else():
    from skillos.evals.envs.slate.skills import telltale_words

    assert telltale_words("Reheat? No: heated leftovers, heating", "pick_heat_then_place_in_recep") == ["heat"]
    assert telltale_words("lamps-in-a-room", "look_at_obj_in_light") == ["lamp"]
    assert telltale_words("A lightweight split-list of literature", "look_at_obj_in_light") == []
    assert telltale_words("theater, school, network", "pick_heat_then_place_in_recep") == []


def _guidance(task, skills):
    from skillos.evals.envs.household.heuristic import reading
    from skillos.evals.envs.alfworld.text import parse_goal

    g = reading.guidance(parse_goal(task), task, skills)
    return {"said": g.said, "tool": g.tool, "avoid": g.avoid, "first": g.transform_first, "places": g.places}


def test_misleading_bodies_mislead_the_cpu_executor_and_the_others_do_not():
    """What the reading executor takes from each skill alone (reading.guidance): the oracle's
    tool and order; each misleading skill a wrong tool, a wrong order, the right tool avoided or
    wrong places to look; relevant and irrelevant skills say nothing that changes its play."""
    from skillos.evals.envs.slate.slates import category_pools

    repo = _built(7)
    kinds = set()
    for task_type, task in TASKS.items():
        pools = category_pools(repo, task_type)
        (oracle,) = pools["oracle"]
        right = _guidance(task, [repo.get(oracle)])
        nothing = _guidance(task, [])
        assert right["first"] and not right["avoid"] and not right["places"]
        if task_type in ("pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep",
                         "pick_clean_then_place_in_recep"):
            assert right["said"] and right["tool"] in ("microwave", "fridge", "sinkbasin")
        assert len(pools["misleading"]) == 7
        for name in pools["misleading"]:
            wrong = _guidance(task, [repo.get(name)])
            assert wrong != right, name
            changed = [k for k in right if wrong[k] != right[k]]
            kinds.update(changed)
            if "tool" in changed and wrong["tool"]:
                assert "wrong-tool" in repo.get(name).extra["metadata"]["mutation"]
        for name in pools["relevant"] + pools["irrelevant"]:
            assert _guidance(task, [repo.get(name)]) == nothing, name
    assert kinds >= {"tool", "avoid", "first", "places", "said"}


def test_a_folder_that_cannot_fill_the_slate_is_a_one_line_error(tmp_path):
    folder = tmp_path / "slate"
    shutil.copytree(SLATES, folder)
    for name in ("keep-count", "finish-at-the-named-receptacle", "read-the-task-sentence"):
        shutil.rmtree(folder / name)
    repo = with_misleading(SkillRepo.load(folder), 5)
    with pytest.raises(SkillosError) as err:
        build_slate(repo, _Game("g1", "pick_two_obj_and_place"), 5, 5, 5, 0)
    assert "5 relevant skills needed for pick_two_obj_and_place" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(SkillosError, match="only 7 misleading variants"):
        with_misleading(SkillRepo.load(SLATES), 8)
    with pytest.raises(cfgmod.ConfigError, match="slate_size: 8 cannot hold"):
        cfgmod.from_dict({"skillgate": {"slate_size": 8, "n_misleading": 5, "n_irrelevant": 5}})


def test_a_repo_without_the_oracle_is_refused(tmp_path):
    folder = tmp_path / "slate"
    shutil.copytree(SLATES, folder)
    shutil.rmtree(folder / "heat-then-place")
    repo = SkillRepo.load(folder)
    assert missing_oracles(repo, ["pick_heat_then_place_in_recep", "pick_and_place_simple"]) == \
        ["pick_heat_then_place_in_recep"]
    with pytest.raises(SkillosError, match="no skill .* has metadata.task_type 'pick_heat_then_place_in_recep'"):
        build_slate(with_misleading(repo, 2), _Game("g1", "pick_heat_then_place_in_recep"), 0, 2, 1, 0)


def test_the_canary_keeps_its_four_skill_slates_and_its_right_name_depends_on_the_task():
    cfg = cfgmod.load(ROOT / "training" / "configs" / "canary-selector.yaml")
    games = [_Game(f"g{i}-{t}", t) for i in range(8) for t in cfg.env.task_types]
    repo, slates = build_slates(cfg, games)
    assert all(s.counts() == {"oracle": 1, "relevant": 0, "misleading": 1, "irrelevant": 2} for s in slates)
    # each task type has its own oracle, and the other type's oracle is its misleading skill: every
    # slate lists both names, so the right one depends on the task, never on the listing
    assert len({s.oracle for s in slates}) == len(cfg.env.task_types)
    oracles = {s.oracle for s in slates}
    assert all(oracles <= set(s.order) and s.misleading == tuple(oracles - {s.oracle}) for s in slates)
    assert all(s.extra.get("metadata", {}).get("derived_from") is None for s in repo.skills)  # none built


def test_the_snapshot_is_frozen_with_a_manifest(tmp_path):
    repo = _built()
    slates = [build_slate(repo, _Game(f"g{i}", t), 5, 5, 5, 0)
              for i, t in enumerate(["pick_and_place_simple", "pick_cool_then_place_in_recep"])]
    manifest = freeze(repo, slates, tmp_path / "a")
    again = freeze(_built(), slates, tmp_path / "b")
    assert manifest["snapshot_hash"] == again["snapshot_hash"]  # the built misleading skills are deterministic
    frozen, by_game, loaded = load_frozen(tmp_path / "a")
    assert by_game["g1"] == slates[1] and loaded["snapshot_hash"] == manifest["snapshot_hash"]
    assert sorted(s.name for s in frozen.skills) == sorted(manifest["files"])
    # the snapshot holds the built misleading skills, and the manifest says what they are
    built = [slates[1].source(n) for n in slates[1].misleading]
    assert all(frozen.get(n).body == repo.get(n).body for n in built)
    assert manifest["misleading"][built[0]]["derived_from"] == "cool-then-place"
    # the naming layer travels with the snapshot: the frozen slate shows each body under the same name
    assert all(by_game["g1"].skill(frozen, n).body == slates[1].skill(repo, n).body for n in slates[1].order)
    assert manifest["composition"] == {"slates": 2, "size": 16, "total": {"oracle": 2, "relevant": 10,
                                       "misleading": 10, "irrelevant": 10},
                                       "per_slate": {"oracle": 1, "relevant": 5, "misleading": 5, "irrelevant": 5}}
    edited = SkillRepo.load(SLATES).copy()
    edited.update("cool-then-place", body=edited.get("cool-then-place").body + "\n4. Done.")
    assert freeze(with_misleading(edited, 5), slates, tmp_path / "c")["snapshot_hash"] != manifest["snapshot_hash"]


@pytest.fixture(scope="module")
def slate_setup(tmp_path_factory, game_cache):
    from skillos.evals.arms import load_games

    cfg = cfgmod.load(CPU)
    games = load_games(cfg, "train", 2)
    return make_slate_setup(cfg, games, tmp_path_factory.mktemp("slate")), games


def test_the_environment_records_every_read_and_plays_the_real_game(slate_setup):
    setup, games = slate_setup
    env = SlateEnv(setup)
    first = env.reset(game_id=games[0].id)
    slate = setup.slates[games[0].id]
    assert all(name in first for name in slate.order) and "Admissible actions:" in first
    assert slate.skill(setup.repo, slate.oracle).body not in first  # bodies only through read_skill
    assert slate.skill(setup.repo, slate.oracle).body in env.read_skill(slate.oracle)
    # the name shown reads the body of the skill it names on this slate (the slate's names are its own)
    assert slate.skill(setup.repo, slate.oracle).body == setup.repo.get(slate.source(slate.oracle)).body
    env.read_skill(slate.misleading[0])
    assert env.read_skill("not-a-skill").startswith("error:")
    admissible = env._episode.obs.admissible
    assert "Admissible actions:" in env.act(admissible[0])
    env.read_skill(slate.relevant[0])
    record = episode_record(env)
    assert record["reads"] == [slate.oracle, slate.misleading[0], "not-a-skill", slate.relevant[0]]
    assert record["read_roles"] == ["oracle", "misleading", None, "relevant"]
    assert record["success"] is False and record["steps"] == 1 and record["with_oracle"]
    with pytest.raises(KeyError):
        SlateEnv(setup).reset(game_id="valid_unseen-0000")


def test_no_skill_shows_no_slate_and_hybrid_twins_hide_the_oracle(slate_setup):
    import dataclasses
    import itertools

    setup, games = slate_setup
    slate = setup.slates[games[0].id]
    bare = dataclasses.replace(setup, no_slate=True, slots=itertools.count())
    env = SlateEnv(bare)
    first = env.reset(game_id=games[0].id)
    assert not any(name in first for name in slate.order) and "No skills are available." in first
    assert env.read_skill(slate.oracle).startswith("error: there is no slate")
    record = episode_record(env)
    assert record["read_roles"] == [None] and record["slate"] == [] and not record["with_oracle"]

    paired = dataclasses.replace(setup, paired=True, slots=itertools.count())
    shown, hidden = SlateEnv(paired), SlateEnv(paired)  # TRL's pool instances 0 and 1 of every batch
    assert (shown.with_oracle, hidden.with_oracle, SlateEnv(paired).with_oracle) == (True, False, True)
    with_text, without_text = shown.reset(game_id=games[0].id), hidden.reset(game_id=games[0].id)
    assert f"- {slate.oracle}:" in with_text and f"- {slate.oracle}:" not in without_text
    assert all(f"- {n}:" in without_text for n in slate.order if n != slate.oracle)
    assert hidden.read_skill(slate.oracle).startswith("error:")
    hidden.read_skill(slate.misleading[0])
    record = episode_record(hidden)
    assert record["read_roles"] == [None, "misleading"] and len(record["slate"]) == len(slate.order) - 1


def test_selection_metrics_carry_denominators_and_keep_unmeasured_out():
    rows = [{"success": True, "reads": ["a"], "read_roles": ["oracle"], "completion_tokens": 100, "selection_tokens": 10},
            {"success": False, "reads": ["b", "a"], "read_roles": ["misleading", "oracle"],
             "completion_tokens": 50, "selection_tokens": 20},
            {"success": False, "reads": [], "read_roles": [], "completion_tokens": 50, "selection_tokens": 0},
            {"success": None, "reads": ["a"], "read_roles": ["oracle"]}]
    m = selection_metrics(rows)
    assert (m["episodes"], m["measured"], m["unmeasured"]) == (4, 3, 1)
    assert m["success"] == {"value": 1 / 3, "n": 1, "of": 3}
    assert m["oracle_read"]["n"] == 2 and m["clean_oracle_read"]["n"] == 1
    assert m["misleading_read"]["n"] == 1 and m["no_read"]["n"] == 1
    assert m["relevant_read"] == {"value": 0.0, "n": 0, "of": 3} and m["irrelevant_read"]["n"] == 0
    first = {c: v["n"] for c, v in m["first_read"].items()}
    assert first == {"oracle": 1, "relevant": 0, "misleading": 1, "irrelevant": 0, "off_slate": 0, "no_read": 1}
    more = selection_metrics(rows + [{"success": True, "reads": ["x", "r"], "read_roles": [None, "relevant"]},
                                     {"success": False, "reads": ["i"], "read_roles": ["irrelevant"]}])
    first = {c: v["n"] for c, v in more["first_read"].items()}
    assert first["off_slate"] == 1 and first["irrelevant"] == 1 and sum(first.values()) == more["measured"] == 5
    assert more["relevant_read"]["n"] == 1 and more["irrelevant_read"]["n"] == 1
    assert m["reads_per_episode"] == {"value": 1.0, "n": 3, "of": 3}
    assert m["selection_token_share"]["value"] == 30 / 200
    empty = selection_metrics([{"success": None, "reads": [], "read_roles": []}])
    assert empty["success"]["value"] is None and empty["success"]["reason"]
    # coerced actions of measured episodes, of every action they took; rows without action counts: unmeasured
    assert m["coerced_actions"] == {"value": None, "n": 0, "of": 0, "reason": "no action counts recorded"}
    counted = [r | {"steps": 2, "coerced_actions": c} for r, c in zip(rows, (0, 1, 2, 2))]
    assert selection_metrics(counted)["coerced_actions"] == {"value": 3 / 6, "n": 3, "of": 6}  # the unmeasured out
    from skillos.evals.envs.slate.slates import render_metrics

    assert "coerced actions 50% (3/6)" in render_metrics("a", selection_metrics(counted))


def test_an_executor_that_is_handed_every_skill_has_no_selection_to_measure():
    """The CPU executor gets every body of the slate: its rows say so (`selects: False`), and its
    read rates are unmeasured with the reason, not "no read 100%"; success is still measured."""
    from skillos.evals.slate_eval import summarize

    rows = [{"arm": arm, "game_id": g, "repeat": 0, "success": g == "x", "reads": [], "read_roles": [],
             "selects": arm == "model", "pins": {}} for arm in ("cpu", "model") for g in ("x", "y")]
    m = selection_metrics(rows[:2])
    assert m["success"] == {"value": 0.5, "n": 1, "of": 2}
    assert m["no_read"]["value"] is None and "chooses none" in m["no_read"]["reason"]
    assert all(v["value"] is None for v in m["first_read"].values())
    assert selection_metrics(rows[2:])["no_read"]["value"] == 1.0
    report = summarize(rows, 0.05, 0.8, 200)
    oracle = next(c for c in report["comparisons"] if c["metric"] == "oracle_read")
    assert oracle["n_paired"] == 0 and oracle["difference"] is None  # nothing to pair against


def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators():
    # 4 plays, 2 wins: pass@2 = 1 - C(2,2)/C(4,2) = 5/6; pass^2 = C(2,2)/C(4,2) = 1/6.
    assert protocol.pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    assert protocol.pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    rows = [{"game_id": "a", "success": s} for s in (True, False, True, False)]
    rows += [{"game_id": "b", "success": s} for s in (True, None, None, None)]  # 1 measured play, 3 errors
    m = protocol.pass_metrics(rows, 2)
    measured, proto = m["measured_only"], m["protocol"]
    assert measured["pass_at_k"] == pytest.approx(5 / 6) and measured["pass_hat_k"] == pytest.approx(1 / 6)
    assert (measured["tasks"], measured["of_tasks"], measured["tasks_left_out"], measured["unmeasured_plays"]) \
        == (1, 2, 1, 3)
    # the protocol's form: b's errored plays are failures, so b is 1 win in 4 plays
    b_at, b_hat = protocol.pass_at_k(4, 1, 2), protocol.pass_hat_k(4, 1, 2)
    assert b_at == pytest.approx(0.5) and b_hat == 0
    assert proto["pass_at_k"] == pytest.approx((5 / 6 + b_at) / 2) and proto["pass_hat_k"] == pytest.approx(1 / 12)
    assert (proto["tasks"], proto["errored_plays_as_failures"]) == (2, 3)
    assert "failure" in proto["form"] and "left out" in measured["form"]
    assert protocol.pass_metrics(rows, 1)["measured_only"]["pass_at_k"] == pytest.approx((0.5 + 1.0) / 2)
    assert protocol.pass_metrics(rows, 1)["protocol"]["pass_at_k"] == pytest.approx((0.5 + 0.25) / 2)


def test_frozen_protocol_comparisons_use_the_protocol_form():
    """An arm that errors more is not flattered: its errors are failures in the comparison."""
    control = [{"arm": "a", "game_id": g, "repeat": r, "success": True, "pins": {}, "reads": ["o"],
                "read_roles": ["oracle"]} for g in ("x", "y") for r in range(2)]
    errors = [{**row, "arm": "b", "success": None if row["game_id"] == "y" else True} for row in control]
    from skillos.evals.slate_eval import summarize

    report = summarize(control + errors, 0.05, 0.8, 200)
    comp = report["pass_comparisons"][0]["pass"][0]
    assert comp["k"] == 1 and "failure" in comp["form"]
    assert comp["control"]["pass_at_k"] == 1.0 and comp["treatment"]["pass_at_k"] == 0.5
    measured = report["arms"]["b"]["pass"][0]["measured_only"]
    assert measured["pass_at_k"] == 1.0  # measured-only would have shown no loss


def test_a_comparison_across_different_pins_is_refused_in_one_line(tmp_path):
    pins = {"task_set": "t", "repeats": 2, "seed": 0, "prompt_hash": "p", "tool_schema_hash": "s", "snapshot_hash": "x"}
    protocol.check_comparable({"a": pins, "b": dict(pins)})
    with pytest.raises(SkillosError) as err:
        protocol.check_comparable({"a": pins, "b": {**pins, "snapshot_hash": "y"}})
    assert "snapshot_hash: x vs y" in str(err.value) and "\n" not in str(err.value)
    for name, rows_pins in (("ctl", pins), ("new", {**pins, "repeats": 3})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "slate_games.jsonl").write_text(json.dumps(
            {"arm": "executor", "game_id": "g", "repeat": 0, "success": True, "reads": [], "read_roles": [],
             "pins": rows_pins}) + "\n")
    result = run_cli("slate", "compare", tmp_path / "ctl", tmp_path / "new")
    assert result.returncode == 2 and "repeats: 2 vs 3" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_eval_spec_must_pin_everything(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"task_set": "t", "repeats": 2, "seed": 0, "prompt_hash": "p",
                                    "tool_schema_hash": "s"}))
    with pytest.raises(SkillosError, match="does not pin snapshot_hash"):
        protocol.load_spec(spec)


def _config(tmp_path, **skillgate):
    data = yaml.safe_load(CPU.read_text())
    data["skillgate"].update(skillgate)
    if data["skillgate"].get("slate_repo") == "slates/household":
        data["skillgate"]["slate_repo"] = str(SLATES)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _gate(tmp_path, **skillgate):
    from skillos import gates

    report = gates.check(cfgmod.load(_config(tmp_path, **skillgate)))
    return {r.check: r.to_dict() for r in report.results}


def test_the_gates_refuse_selector_credit_without_a_slate_or_an_oracle(tmp_path):
    assert _gate(tmp_path)["skillgate-slate"]["status"] == "PASS"
    no_slate = _gate(tmp_path, slate_repo=None)["skillgate-slate"]
    assert no_slate["status"] == "FAIL" and "needs a slate" in no_slate["detail"]
    folder = tmp_path / "partial"
    shutil.copytree(SLATES, folder)
    shutil.rmtree(folder / "cool-then-place")
    no_oracle = _gate(tmp_path, slate_repo=str(folder))["skillgate-slate"]
    assert no_oracle["status"] == "FAIL" and "pick_cool_then_place_in_recep" in no_oracle["detail"]
    control = _gate(tmp_path, selector_credit="task-mask-only", selector_coef=0.5)["skillgate-credit"]
    assert control["status"] == "FAIL" and "exactly 0" in control["detail"]
    assert _gate(tmp_path, selector_credit="task-mask-only", selector_coef=0.0)["skillgate-credit"]["status"] == "PASS"
    ignored = _gate(tmp_path, trainer="curator")["skillgate-credit"]
    assert ignored["status"] == "FAIL" and "ignored" in ignored["detail"]
    result = run_cli("train", _config(tmp_path, slate_repo=str(folder)))
    assert result.returncode == 1 and "train refused by the launch gates" in result.stderr
    assert "skillgate-slate" in result.stderr.strip().splitlines()[-1]


def test_the_eval_pins_gate_refuses_a_config_that_departs_from_its_frozen_spec(tmp_path, game_cache):
    from skillos.evals.arms import load_games
    from skillos.evals.slate_eval import config_pins
    from skillos.checking import Context
    from skillos.gates.dryrun import eval_pins

    config = _config(tmp_path, slate_repo=str(SLATES))
    cfg = cfgmod.load(config)
    cfg.env.n_games = 1
    protocol.write_spec(protocol.EvalSpec(**config_pins(cfg, load_games(cfg, cfg.env.split, 1))), tmp_path / "spec.yaml")
    cfg.skillgate.eval_spec = str(tmp_path / "spec.yaml")
    assert eval_pins(Context(cfg, base_dir=tmp_path)).status == "PASS"
    cfg.skillgate.repeats = 3
    cfg.skillgate.n_misleading, cfg.skillgate.n_irrelevant = 4, 6  # another slate: another snapshot
    refused = eval_pins(Context(cfg, base_dir=tmp_path))
    assert refused.status == "FAIL"
    assert "repeats: spec 1 vs this config 3" in refused.detail and "snapshot_hash: spec" in refused.detail


PROTOCOL = ROOT / "evals" / "configs" / "skillgate-protocol.yaml"


def test_the_shipped_protocol_is_the_methods_size_and_pins_everything():
    """134 held-out games x 3 plays on 16-skill slates, with a spec file that pins every key (the
    static gate reads it)."""
    from skillos import gates

    cfg = cfgmod.load(PROTOCOL)
    assert (cfg.env.n_games, cfg.skillgate.repeats, cfg.env.seed, cfg.skillgate.slate_size) == (134, 3, 0, 16)
    spec = protocol.load_spec(PROTOCOL.parent / cfg.skillgate.eval_spec)
    assert (spec.repeats, spec.seed) == (cfg.skillgate.repeats, cfg.env.seed)
    by_name = {r.check: r for r in gates.check(cfg).results}
    assert by_name["eval-protocol"].status == "PASS"


@pytest.mark.slow
def test_the_shipped_protocol_spec_is_what_its_config_plays(tmp_path, game_cache):
    """The frozen pins equal those of the 134 games and slates the config would play today
    (generating the games takes ~1-2 min on 2 cores)."""
    from skillos.checking import Context
    from skillos.gates.dryrun import eval_pins

    result = eval_pins(Context(cfgmod.load(PROTOCOL), base_dir=PROTOCOL.parent))
    assert result.status == "PASS", result.detail


def test_the_prompt_pin_is_the_hash_of_what_the_slate_executor_sends(monkeypatch):
    """Changing the system prompt the slate executor sends (envs/slate/slates.py's SYSTEM), its
    instructions or a template changes the run's prompt pin; the ALFWorld executor's prompt,
    which the slate executor never sends, does not."""
    from types import SimpleNamespace

    from skillos.evals import slate_eval
    from skillos.evals.envs.household import llm as llm_executor
    from skillos.evals.envs.slate import executor as slate_executor
    from skillos.evals.envs.slate import slates as slate

    cfg = cfgmod.load(CPU)
    games = [SimpleNamespace(content_hash="h1")]
    pin = slate_eval.run_pins(cfg, games, "snap").prompt_hash
    monkeypatch.setattr(llm_executor, "SYSTEM", "another ALFWorld executor prompt")
    assert slate_eval.run_pins(cfg, games, "snap").prompt_hash == pin
    monkeypatch.setattr(slate, "SYSTEM", slate.SYSTEM + " Read at most one skill.")
    from skillos.evals.backends.chat import ChatResult

    sent = []
    chat = SimpleNamespace(chat=lambda messages, tools=None: sent.append(messages[0]["content"]) or ChatResult(
        "", [{"name": "act", "arguments": {"command": "look"}}], completion_tokens=3))
    slate_executor.SlateEpisode(SimpleNamespace(chat=chat), "task", []).act("You are in a room.", ["look"])
    assert sent == [slate.SYSTEM]  # the executor sends the changed prompt ...
    changed = slate_eval.run_pins(cfg, games, "snap").prompt_hash
    assert changed != pin  # ... and the pin moves with it
    monkeypatch.setattr(slate, "step_result", lambda obs, won, admissible: obs)  # a template the model reads
    assert slate_eval.run_pins(cfg, games, "snap").prompt_hash not in (pin, changed)


def test_the_slate_executor_records_reads_over_a_real_sdk(tmp_path, monkeypatch, slate_setup):
    """A scripted model behind the real OpenAI SDK reads the oracle, then acts: the episode
    records the read with its token position and the runner plays the action on the real game."""
    import dataclasses

    from llm_server import ScriptedLLM

    from skillos.config import BackendConfig
    from skillos.evals.envs.slate.executor import SlateExecutor
    from skillos.evals.envs.alfworld.env import AlfworldEnv
    from skillos.evals.envs.slate.slates import SlateRetriever
    from skillos.evals.runner import play

    setup, games = slate_setup
    slate = setup.slates[games[0].id]

    def policy(messages):
        last = messages[-1]
        if last["role"] == "user":  # the first turn: reason, then read the oracle
            return {"content": f"<skill_reasoning>{slate.oracle} fits.</skill_reasoning>",
                    "tool_calls": [{"name": "read_skill", "arguments": {"name": slate.oracle}}]}
        seen = [m["content"] for m in messages if "Admissible actions: " in (m.get("content") or "")][-1]
        admissible = seen.split("Admissible actions: ", 1)[1].splitlines()[0].split(", ")
        return {"content": "", "tool_calls": [{"name": "act", "arguments": {"command": admissible[-1]}}]}

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedLLM(policy) as llm:
        executor = SlateExecutor(BackendConfig(backend="openai", model="Qwen3-8B", base_url=llm.openai_url))
        traj = play(AlfworldEnv(fast=True), executor, SlateRetriever(setup.repo, slate), games[0], 2, 9)
    assert traj.unmeasured_reason is None and len(traj.steps) == 2
    assert [r.name for r in traj.reads] == [slate.oracle]
    assert (traj.reads[0].token_start, traj.reads[0].token_end) == (0, 7)  # the server's 7 tokens per reply
    assert traj.coerced == 0
    sent = [m["role"] for m in llm.calls[-1]["body"]["messages"]]
    assert sent[:4] == ["system", "user", "assistant", "tool"]  # the read was answered before acting


GPU_PROFILES = sorted((ROOT / "training" / "configs").glob("selector-gpu-*.yaml"))


def test_there_is_one_gpu_config_per_profile():
    profiles = {cfgmod.load(p).skillgate.selector_credit: p.name for p in GPU_PROFILES}
    assert set(profiles) == set(cfgmod.SELECTOR_CREDITS) and len(GPU_PROFILES) == len(cfgmod.SELECTOR_CREDITS)
    assert all(name == f"selector-gpu-{p.replace('_', '-')}.yaml" for p, name in profiles.items())


@pytest.mark.parametrize("path", GPU_PROFILES, ids=[p.stem for p in GPU_PROFILES])
def test_each_profiles_gpu_config_passes_the_static_gates(path, canaries_passed):
    from skillos import gates

    cfg = cfgmod.load(path)
    report = gates.check(cfg)
    assert report.failed == [], [r.line() for r in report.failed]
    by_name = {r.check: r for r in report.results}
    assert by_name["skillgate-slate"].status == "PASS" and by_name["skillgate-credit"].status == "PASS"
    # diffed against SkillGate's table, not the SkillOS curator's: the method's 16-skill slates
    assert by_name["reference"].seen == "skillgate/alfworld"
    assert by_name["table.skillgate.slate_size"].status == "PASS"
    credit_row = by_name["table.skillgate.selector_credit"]
    assert credit_row.status == ("PASS" if cfg.skillgate.selector_credit == "clean-oracle" else "WARN")
    assert (cfg.skillgate.selector_credit == "clean-oracle") != ("skillgate.selector_credit" in cfg.divergences)
    assert not any(c.startswith("table.reward.") or c == "table.retrieval.top_k" for c in by_name)
    assert cfg.skillgate.init == "oracle-grpo"  # every arm starts from the same SFT model


def test_a_fresh_ledger_refuses_the_gpu_configs_until_their_canary_passed():
    from skillos import gates

    report = gates.check(cfgmod.load(ROOT / "training" / "configs" / "selector-gpu-hybrid-slate.yaml"))
    assert [r.check for r in report.failed] == ["recipe-learns"]
    assert "selector:hybrid_slate" in report.failed[0].line()


def test_the_slate_check_asks_for_oracles_of_the_task_types_the_run_plays_only():
    """A slate folder with oracles for heat and cool fills a run of heat and cool tasks (the selector
    canary's), and still fails a run of every type."""
    from skillos import gates

    canary = cfgmod.load(ROOT / "training" / "configs" / "canary-selector.yaml")
    by_name = {r.check: r for r in gates.check(canary).results}
    assert by_name["skillgate-slate"].status == "PASS", by_name["skillgate-slate"].detail
    every = cfgmod.with_sets(canary, ["env.task_types=null"])
    failed = {r.check: r for r in gates.check(every).results}["skillgate-slate"]
    assert failed.status == "FAIL" and "pick_clean_then_place_in_recep" in failed.detail
    assert "pick_heat_then_place_in_recep" not in failed.detail
