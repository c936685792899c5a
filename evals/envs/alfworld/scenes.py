"""Scene data shipped inside the alfworld wheel: floor plans, receptacles and their poses,
object types per room, what can contain what, and the goal library.

Everything here is read from the installed `alfworld` package (no download). Imported lazily.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path

from skillos.errors import SkillosError

TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
# ALFRED floor plans: kitchens 1-30, living rooms 201-230, bedrooms 301-330, bathrooms 401-430.
ROOM_OF_PLAN = {range(1, 31): "Kitchen", range(201, 231): "LivingRoom",
                range(301, 331): "Bedroom", range(401, 431): "Bathroom"}
LAMPS = ("DeskLamp", "FloorLamp")
# Receptacles a lamp stands on (lamps are not in canContain: they are placed, never moved).
LAMP_STANDS = ("SideTable", "Desk", "Dresser", "Shelf", "CoffeeTable", "DiningTable", "TVStand")


def room_of(plan: int) -> str:
    for plans, room in ROOM_OF_PLAN.items():
        if plan in plans:
            return room
    raise ValueError(f"FloorPlan{plan} is not an ALFRED floor plan")


@functools.lru_cache(maxsize=1)
def alfworld_root() -> Path:
    """The installed alfworld package; a one-line error if the [alfworld] extra is missing."""
    if os.environ.get("ALFWORLD_DATA") == "":
        # `import alfworld` makes the folder ALFWORLD_DATA names, and fails on an empty name
        raise SkillosError("ALFWORLD_DATA is set but empty: unset it, or point it at the official data")
    try:
        import alfworld
        import fast_downward  # noqa: F401 - the engine's planner, compiled on install
        import textworld  # noqa: F401
    except ImportError as exc:
        raise SkillosError(
            f"the household env needs the real ALFWorld engine ({exc.name} is not installed): "
            "pip install 'skillos[alfworld]'"
        ) from None
    except OSError as exc:  # alfworld creates its data folder on import
        raise SkillosError(f"importing alfworld failed: {exc}") from None
    return Path(alfworld.__file__).parent


@functools.lru_cache(maxsize=1)
def constants():
    from alfworld.gen import constants as c  # plain data module from the wheel

    return c


@functools.lru_cache(maxsize=1)
def goal_library() -> dict:
    from alfworld.gen import goal_library as g

    return g.gdict


def domain_text() -> str:
    return (alfworld_root() / "data" / "alfred.pddl").read_text()


def grammar_text() -> str:
    return (alfworld_root() / "data" / "alfred.twl2").read_text()


def receptacle_type(receptacle_id: str) -> str:
    parts = receptacle_id.split("|")
    return parts[4] if len(parts) == 5 else parts[0]  # "Sink|x|y|z|SinkBasin" -> SinkBasin


@dataclass(frozen=True)
class Scene:
    plan: int
    room: str
    object_types: frozenset  # types present in the real ALFRED scene
    receptacles: dict  # receptacle id -> interaction pose (x, z, rotation, horizon)

    def receptacle_ids(self, rtype: str) -> list[str]:
        return sorted(r for r in self.receptacles if receptacle_type(r) == rtype)

    @property
    def receptacle_types(self) -> set[str]:
        return {receptacle_type(r) for r in self.receptacles}


@functools.lru_cache(maxsize=None)
def load_scene(plan: int) -> Scene:
    layouts = alfworld_root() / "gen" / "layouts"
    objects = json.loads((layouts / f"FloorPlan{plan}-objects.json").read_text())
    openable = json.loads((layouts / f"FloorPlan{plan}-openable.json").read_text())
    c = constants()
    receptacles = {
        rid: tuple(pose)
        for rid, pose in openable.items()
        if receptacle_type(rid) in c.VAL_RECEPTACLE_OBJECTS
        and receptacle_type(rid) not in c.MOVABLE_RECEPTACLES_SET
    }
    return Scene(plan, room_of(plan), frozenset(objects), receptacles)


def all_plans() -> list[int]:
    return [p for plans in ROOM_OF_PLAN for p in plans]
