"""A seeded generator of ALFWorld games from the data shipped in the alfworld wheel.

A game is what ALFWorld's own loader reads: `game.tw-pddl` (JSON: pddl_domain, grammar with the
task sentence filled in, pddl_problem, solvable, walkthrough) and `traj_data.json` (task_type,
pddl_params, scene). Rooms are real ALFRED floor plans (receptacle ids and interaction poses
from `gen/layouts`); goals are the exact PDDL of `gen/goal_library.py`; what may hold what comes
from `gen/constants.py`.

Objects are placed with a *placement prior*, because uniform placement would make a room carry
no regularity to learn (ALFRED's real scenes put apples in fridges, not in toilets): for each
object type, the receptacle types that may hold it are ranked by sha256(object|receptacle), and
the type of rank r gets weight 2^-r. The prior is a fixed property of this generator
(PLACEMENT_PRIOR, recorded in every split manifest), the same on train and held-out games, so
what a curator learns on train can transfer, and nothing about a held-out game leaks.

The generator knows where it put everything, so it writes an oracle plan; `verify` (in env.py)
replays it through the real TextWorld PDDL engine and keeps the game only if the engine says won.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field

from skillos.evals.envs.alfworld import scenes

GENERATOR_VERSION = "skillos-alfworld-gen/1"
PLACEMENT_PRIOR = "rank receptacle types per object type by sha256('Obj|Recep'); weight 2^-rank"
MAX_TARGET_INSTANCES = 3
N_DISTRACTOR_TYPES = (5, 9)
# Always declared: the domain names these types in action preconditions without declaring them.
REQUIRED_OTYPES = ("Knife", "ButterKnife")
REQUIRED_RTYPES = ("SinkBasin", "Microwave", "Fridge")
START_LOCATION = "loc|0|0|0|0|start"  # holds no receptacle, as ALFWorld requires


def pddl_name(text: str) -> str:
    """ALFRED ids to PDDL-safe names, as ALFWorld writes them (`|` -> `_bar_`, ...)."""
    for old, new in (("-", "_minus_"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_")):
        text = text.replace(old, new)
    return text


def _sha(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def can_contain(rtype: str, otype: str) -> bool:
    return otype in scenes.constants().VAL_RECEPTACLE_OBJECTS.get(rtype, ())


def prior_weights(otype: str, rtypes) -> dict[str, float]:
    """The placement prior restricted to the receptacle types of one room."""
    allowed = sorted(r for r in rtypes if can_contain(r, otype))
    ranked = sorted(allowed, key=lambda r: _sha(f"{otype}|{r}"))
    return {r: 2.0 ** -rank for rank, r in enumerate(ranked)}


def pickupable_types(scene: scenes.Scene) -> list[str]:
    c = scenes.constants()
    held = set().union(*c.VAL_RECEPTACLE_OBJECTS.values())
    rtypes = scene.receptacle_types
    return sorted(
        t for t in scene.object_types
        if t in held and not t.endswith("Sliced") and t not in scenes.LAMPS
        and any(can_contain(r, t) for r in rtypes)
    )


@dataclass
class GameSpec:
    """One generated game, before it is verified by the engine."""

    plan: int
    task_type: str
    task: str  # the task sentence
    pddl_params: dict
    problem: str
    oracle: list = field(default_factory=list)  # steps over raw ids: ("goto", rid), ("take", oid, rid)...
    placements: dict = field(default_factory=dict)  # object id -> receptacle id

    def traj_data(self, extra: dict) -> dict:
        return {
            "task_type": self.task_type,
            "pddl_params": self.pddl_params,
            "scene": {"floor_plan": f"FloorPlan{self.plan}", "scene_num": self.plan},
            "turk_annotations": {"anns": [{"task_desc": self.task}]},
            "skillos": extra,
        }


class _Placer:
    def __init__(self, scene, rng):
        self.scene, self.rng = scene, rng
        self.placements: dict[str, str] = {}
        self._coords: set[str] = set()

    def new_id(self, otype: str) -> str:
        while True:
            x, y, z = (self.rng.uniform(-4, 4) for _ in range(3))
            oid = f"{otype}|{x:+06.2f}|{y:+06.2f}|{z:+06.2f}"
            if oid not in self._coords:
                self._coords.add(oid)
                return oid

    def place(self, otype: str, exclude_rtypes=()) -> str | None:
        weights = {r: w for r, w in prior_weights(otype, self.scene.receptacle_types).items()
                   if r not in exclude_rtypes}
        if not weights:
            return None
        rtypes = sorted(weights)
        rtype = self.rng.choices(rtypes, weights=[weights[r] for r in rtypes])[0]
        receptacle = self.rng.choice(self.scene.receptacle_ids(rtype))
        oid = self.new_id(otype)
        self.placements[oid] = receptacle
        return oid


def _choose_target(task_type, scene, rng):
    """(object type, parent type, toggle type) for a task in this scene, or None."""
    c = scenes.constants()
    rtypes = scene.receptacle_types
    pick = pickupable_types(scene)
    need = {"pick_clean_then_place_in_recep": ("Cleanable", "SinkBasin"),
            "pick_heat_then_place_in_recep": ("Heatable", "Microwave"),
            "pick_cool_then_place_in_recep": ("Coolable", "Fridge")}
    if task_type == "look_at_obj_in_light":
        lamps = sorted(set(scenes.LAMPS) & scene.object_types)
        stands = [r for r in scenes.LAMP_STANDS if r in rtypes]
        if not lamps or not stands or not pick:
            return None
        return rng.choice(pick), "", rng.choice(lamps)
    if task_type in need:
        action, appliance = need[task_type]
        if appliance not in rtypes:
            return None
        pick = [t for t in pick if t in c.VAL_ACTION_OBJECTS[action]]
    options = []
    for otype in pick:
        for rtype in sorted(rtypes):
            if not can_contain(rtype, otype) or rtype == need.get(task_type, ("", ""))[1]:
                continue
            # the object must start somewhere other than the goal's receptacle type
            if any(r != rtype for r in prior_weights(otype, rtypes)):
                options.append((otype, rtype))
    if not options:
        return None
    otype, rtype = rng.choice(options)
    return otype, rtype, ""


def generate(plan: int, task_type: str, rng: random.Random) -> GameSpec | None:
    """One game of `task_type` in FloorPlan`plan`, or None if the room cannot host it."""
    scene = scenes.load_scene(plan)
    if scene.room not in scenes.constants().GOALS_VALID[task_type]:
        return None
    target = _choose_target(task_type, scene, rng)
    if target is None:
        return None
    otype, parent_type, toggle_type = target
    appliance = {"pick_clean_then_place_in_recep": "SinkBasin", "pick_heat_then_place_in_recep": "Microwave",
                 "pick_cool_then_place_in_recep": "Fridge"}.get(task_type, "")
    placer = _Placer(scene, rng)
    # Never start a target inside the goal's receptacle type (the goal would already hold),
    # nor inside the fridge for a cool task (ALFWorld counts that as already cool).
    exclude = {parent_type, appliance} - {""}
    n_targets = rng.randint(2, MAX_TARGET_INSTANCES) if task_type == "pick_two_obj_and_place" \
        else rng.randint(1, MAX_TARGET_INSTANCES)
    targets = [placer.place(otype, exclude) for _ in range(n_targets)]
    if None in targets:  # nowhere to put the object but the goal's own receptacle type
        return None
    lamp = None
    if toggle_type:
        stands = [r for r in scenes.LAMP_STANDS if r in scene.receptacle_types]
        lamp = placer.new_id(toggle_type)
        placer.placements[lamp] = rng.choice(scene.receptacle_ids(rng.choice(stands)))
    others = [t for t in pickupable_types(scene) if t != otype]
    for dtype in rng.sample(others, min(len(others), rng.randint(*N_DISTRACTOR_TYPES))):
        for _ in range(rng.randint(1, 2)):
            placer.place(dtype)

    parent = rng.choice(scene.receptacle_ids(parent_type)) if parent_type else ""
    oracle = _oracle(task_type, scene, placer.placements, targets, parent, appliance, lamp)
    templates = scenes.goal_library()[task_type]["templates"]
    task = rng.choice(templates).format(obj=otype.lower(), recep=parent_type.lower(),
                                        toggle=toggle_type.lower(), mrecep="")
    params = {"object_target": otype, "parent_target": parent_type, "toggle_target": toggle_type,
              "mrecep_target": "", "object_sliced": False}
    problem = _problem(task_type, scene, placer.placements, params, lamp)
    return GameSpec(plan, task_type, task, params, problem, oracle, dict(placer.placements))


def _oracle(task_type, scene, placements, targets, parent, appliance, lamp):
    appliance_id = scene.receptacle_ids(appliance)[0] if appliance else ""
    verb = {"SinkBasin": "clean", "Microwave": "heat", "Fridge": "cool"}.get(appliance)
    plan = []

    def fetch(oid):
        plan.extend([("goto", placements[oid]), ("open", placements[oid]), ("take", oid, placements[oid])])

    first = targets[0]
    fetch(first)
    if verb:
        plan.extend([("goto", appliance_id), (verb, first, appliance_id)])
    if task_type == "look_at_obj_in_light":
        plan.extend([("goto", placements[lamp]), ("use", lamp)])
        return plan
    plan.extend([("goto", parent), ("open", parent), ("move", first, parent)])
    if task_type == "pick_two_obj_and_place":
        fetch(targets[1])
        plan.extend([("goto", parent), ("open", parent), ("move", targets[1], parent)])
    return plan


def _location(pose) -> str:
    x, z, rotation, horizon = pose
    return f"loc|{round(x / 0.25)}|{round(z / 0.25)}|{int(rotation)}|{int(horizon)}"


def _problem(task_type, scene, placements, params, lamp) -> str:
    c = scenes.constants()
    receptacles = sorted(scene.receptacles)
    objects = sorted(placements)
    rtypes = sorted({scenes.receptacle_type(r) for r in receptacles} | set(REQUIRED_RTYPES))
    otypes = sorted({oid.split("|")[0] for oid in objects} | set(REQUIRED_OTYPES))
    location_of = {r: _location(scene.receptacles[r]) for r in receptacles}
    locations = sorted(set(location_of.values()) | {START_LOCATION})
    facts = []
    for r in receptacles:
        facts.append(f"(receptacleType {r} {scenes.receptacle_type(r)}Type)")
        facts.append(f"(receptacleAtLocation {r} {location_of[r]})")
        if scenes.receptacle_type(r) in c.OPENABLE_CLASS_SET:
            facts.append(f"(openable {r})")
    for o in objects:
        otype = o.split("|")[0]
        facts.append(f"(objectType {o} {otype}Type)")
        facts.append(f"(inReceptacle {o} {placements[o]})")
        facts.append(f"(objectAtLocation {o} {location_of[placements[o]]})")
        if o != lamp:
            facts.append(f"(pickupable {o})")
            facts.append(f"(moveable {o})")
        for prop, action in (("cleanable", "Cleanable"), ("heatable", "Heatable"),
                             ("coolable", "Coolable"), ("sliceable", "Sliceable")):
            if otype in c.VAL_ACTION_OBJECTS[action]:
                facts.append(f"({prop} {o})")
        if o == lamp:
            facts.append(f"(toggleable {o})")
    for rt in rtypes:
        for ot in otypes:
            if can_contain(rt, ot):
                facts.append(f"(canContain {rt}Type {ot}Type)")
    facts.append(f"(atLocation agent1 {START_LOCATION})")
    goal = scenes.goal_library()[task_type]["pddl"].format(
        obj=params["object_target"], recep=params["parent_target"],
        toggle=params["toggle_target"], mrecep="")
    declarations = (
        ["agent1 # agent"]
        + [f"{loc} # location" for loc in locations]
        + [f"{r} # receptacle" for r in receptacles]
        + [f"{o} # object" for o in objects]
        + [f"{t}Type # otype" for t in otypes]
        + [f"{t}Type # rtype" for t in rtypes]
    )
    text = (
        f"(define (problem plan_{task_type}_{scene.plan})\n    (:domain alfred)\n"
        "    (:objects\n        " + "\n        ".join(declarations) + "\n    )\n"
        "    (:init\n        " + "\n        ".join(facts) + "\n    )\n" + goal
    )
    # ALFWorld writes `#` for `-` in type declarations, then escapes the ids' characters.
    return pddl_name(text).replace("#", "-")


def game_json(spec: GameSpec, walkthrough: list[str] | None, solvable: bool) -> dict:
    """The `game.tw-pddl` content, with the task sentence in the grammar as ALFWorld does."""
    return {
        "pddl_domain": scenes.domain_text(),
        "grammar": scenes.grammar_text().replace("UNKNOWN GOAL", spec.task),
        "pddl_problem": spec.problem,
        "solvable": solvable,
        "walkthrough": walkthrough,
    }


def content_hash(game: dict) -> str:
    """Identity of a game: its problem and its task sentence (not the path, not the seed)."""
    payload = json.dumps([game["pddl_problem"], game["grammar"]], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
