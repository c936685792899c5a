"""The heuristic executor reads any skill's prose: one grammar over ALFWorld's words, not one
writer's layout (evals/envs/household/heuristic/reading.py)."""

import pytest

pytest.importorskip("alfworld", reason="the vocabulary comes from the alfworld wheel")

from skillos.evals.envs.household.heuristic import notes, reading  # noqa: E402
from skillos.evals.envs.alfworld.text import parse_goal  # noqa: E402
from skillos.repo import Skill  # noqa: E402

pytestmark = pytest.mark.alfworld


def skill(body: str, name: str = "tips", description: str = "Household tips.") -> Skill:
    return Skill(name=name, description=description, body=body)


def guide(task: str, *bodies: str, **kw):
    return reading.guidance(parse_goal(task), task, [skill(b, **kw) for b in bodies])


HEAT = "heat some bread and put it in countertop"
COOL = "put a cool tomato in diningtable"
CLEAN = "clean some fork and put it in drawer"


@pytest.mark.parametrize("task, body, tool, first", [
    # paragraphs, second person, synonyms of nouns and verbs
    (HEAT, "When you need something hot, warm it up in the microwave and only then put it down "
           "where the task says.", "microwave", True),
    (HEAT, "To heat an object, use the microwave. Then put it where the task says.", "microwave", True),
    (HEAT, "Grab the item. Microwave it. Afterwards drop it on the target.", "microwave", True),
    (COOL, "- Pick up the object.\n- Go to the fridge.\n- Cool it using the fridge.\n- Then place it in "
           "the receptacle named by the task.", "fridge", True),
    (COOL, "Chill it in the refrigerator, and only after that set it on the target.", "fridge", True),
    (COOL, "Put it in the target, but only after cooling it in the fridge.", "fridge", True),
    (CLEAN, "Take it to the sink and wash it before you put it down.", "sinkbasin", True),
    (CLEAN, "Before putting it in the drawer, rinse it in the sink basin.", "sinkbasin", True),
    (CLEAN, "## Cleaning\n1. Find the X.\n2. Go to the sinkbasin.\n3. Clean the X.\n4. Move the X to Y.",
     "sinkbasin", True),
    # a pitfall states the order by its opposite
    (CLEAN, "Do not put the fork on the counter before rinsing it in the sink basin.", "sinkbasin", True),
    (HEAT, "A common mistake is putting the food on the counter before heating it in the microwave.",
     "microwave", True),
    # a misleading skill misleads: the executor follows what it says
    (HEAT, "Put the X in Y, then heat it with the stoveburner.", "stoveburner", False),
    # the order and no tool
    (HEAT, "Heat it first, then put it in the target.", None, True),
])
def test_transformation_tool_and_order_in_any_style(task, body, tool, first):
    g = guide(task, body)
    assert g.said and g.tool == tool and g.transform_first is first


def test_a_tool_to_avoid_is_avoided():
    g = guide(HEAT, "Never heat food on the stove burner; microwave it instead.")
    assert g.tool == "microwave" and "stoveburner" in g.avoid


def test_the_task_decides_what_counts():
    """A skill about cooling says nothing to a heat task, and the other way round."""
    body = "Cool the X with the fridge before you put it in Y."
    assert not guide(HEAT, body).said and guide("cool some apple and put it in countertop", body).said
    assert guide(HEAT, body).empty


def test_a_lamp_task_reads_turning_the_lamp_on():
    assert guide("look at keychain under the desklamp",
                 "Pick up the thing you must look at, then turn on the desk lamp.").said
    assert guide("examine the book with the desklamp", "Look at the X under the lamp.").said
    assert not guide("look at keychain under the desklamp", "Turn off the lamp when you leave.").said


def test_what_a_body_says_to_use_for_a_lamp_task_stands_over_its_description():
    """A look skill listed as the lamp's but whose body says to use something else, or to avoid the
    lamp, says nothing of the lamp; a body that names only receptacles to search, or avoids one
    light for another, leaves the lamp said (by the description, or by the body itself)."""
    look, lamp = "look at mug under the desklamp", "Examine an object under a desklamp or floorlamp."
    assert not guide(look, "1. Take X.\n2. Use the television while holding X.", description=lamp).said
    assert not guide(look, "1. Take X.\n2. Do not use a lamp; examine X where you found it.", description=lamp).said
    assert guide(look, "1. Inspect the shelves and the desk for the mug.\n2. Take it.", description=lamp).said
    assert guide(look, "Don't use the ceiling light; use the desklamp.", description="Examine it.").said
    assert guide(look, "Never use the floorlamp, it is broken; use the desklamp instead.", description="Examine it.").said


@pytest.mark.parametrize("body, obj, first, last", [
    ("Apples are usually in the fridge or on the countertop, while knives are in drawers. "
     "Apples are never in cabinets.", "apple", "fridge", "cabinet"),
    ("Apples are usually in the fridge or on the countertop, while knives are in drawers.", "knife", "drawer", None),
    ("You can often find a mug in the coffee machine; check the cabinets too.", "mug", "coffeemachine", None),
    ("| place | found | searched |\n|---|---|---|\n| sinkbasin | 14 | 16 |\n| cabinet | 0 | 74 |",
     "apple", "sinkbasin", "cabinet"),
    ("- countertop: found there 5 of 9 times\n- cabinet: not found there 0 of 12 times", "apple", "countertop",
     "cabinet"),
    ("Mostly on the dining table (found 4 out of 5 times), rarely in a drawer.", "apple", "diningtable", "drawer"),
])
def test_where_things_are(body, obj, first, last):
    task = f"put some {obj} on sofa"
    g = guide(task, body, name=f"where-to-find-{obj}", description=f"Where {obj}s are.")
    scores = g.places[obj]
    assert max(scores, key=scores.get) == first
    if last:
        assert g.score(obj, last) < reading.NOTHING_SAID < g.score(obj, first)


def test_places_of_other_objects_change_nothing():
    g = guide("put some pencil on desk", "Apples are usually in the fridge.", name="where-to-find-apple")
    assert g.empty and g.score("pencil", "fridge") == reading.NOTHING_SAID


def test_the_curators_own_prose_reads_back():
    proc = notes.Procedure("put a hot X in Y", ["find a X and take it", "go to microwave",
                                                "heat the X with microwave", "go to Y", "move the X to Y"],
                           won=3, failed=1, pitfalls=[notes.pitfall("heat the X with microwave")])
    description, body = proc.render()
    assert notes.Procedure.parse(body) == proc  # the curator's bookkeeping
    g = guide("put a hot apple in countertop", body, name="put-a-hot-x-in-y", description=description)
    assert (g.tool, g.transform_first) == ("microwave", True)
    loc = notes.Locations("apple", {"fridge": [2, 2], "countertop": [3, 5], "cabinet": [0, 9]})
    description, body = loc.render()
    assert notes.Locations.parse("apple", body) == loc
    g = guide("put some apple on sofa", body, name="where-to-find-apple", description=description)
    assert sorted(g.places["apple"], key=g.places["apple"].get, reverse=True) == ["fridge", "countertop", "cabinet"]


def test_the_earlier_skill_has_the_last_word():
    g = reading.guidance(parse_goal(HEAT), HEAT, [skill("Heat it with the microwave."),
                                                   skill("Heat it on the stoveburner.")])
    assert g.tool == "microwave"
