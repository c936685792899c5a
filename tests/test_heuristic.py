"""The heuristic executor and curator on real generated games."""

import pytest

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")

from skillos.evals.envs.household.heuristic import HeuristicCurator, HeuristicExecutor, notes, reading  # noqa: E402
from skillos.evals.envs.household.heuristic.curator import extract_procedure  # noqa: E402
from skillos.evals.envs.alfworld import games  # noqa: E402
from skillos.evals.envs.alfworld.env import AlfworldEnv  # noqa: E402
from skillos.evals.envs.alfworld.text import parse_goal  # noqa: E402
from skillos.evals.runner import play, run_arm  # noqa: E402
from skillos.evals.trajectory import Step, Trajectory  # noqa: E402
from skillos.repo import Retriever, SkillRepo, validate_path  # noqa: E402

PLAY = dict(retrieval_mode="bm25", max_steps=30, top_k=5, concurrency=1, wave_size=1)  # the quickstart's

pytestmark = pytest.mark.alfworld


@pytest.fixture(scope="module")
def train(game_cache):
    return games.make_games("train", 12, seed=0, cache_dir=game_cache)


def test_goal_reading():
    goal = parse_goal("put a clean apple in fridge")
    assert (goal.obj, goal.target, goal.count, goal.kind) == ("apple", "fridge", 1, "put a clean X in Y")
    assert parse_goal("find two handtowel and put them in garbagecan").count == 2
    assert parse_goal("look at keychain under the desklamp").target == "desklamp"
    assert parse_goal("do a backflip") is None


def test_executor_only_plays_admissible_commands_and_respects_the_cap(train):
    env = AlfworldEnv()
    for game in train[:6]:
        traj = play(env, HeuristicExecutor(), None, game, max_steps=30, top_k=5)
        assert traj.won is not None and traj.unmeasured_reason is None
        assert len(traj.steps) <= 30 and traj.coerced == 0


def test_curator_writes_valid_readable_skills_through_the_repo(train, tmp_path):
    repo = SkillRepo(tmp_path)
    rows = run_arm("closed_loop", train, env=AlfworldEnv(), executor=HeuristicExecutor(), repo=repo,
                   curator=HeuristicCurator(), **PLAY)
    assert validate_path(tmp_path) == []
    names = {s.name for s in SkillRepo.load(tmp_path).skills}
    assert len(names) == len(repo) > 0
    assert any(n.startswith("where-to-find-") for n in names)
    won_kinds = {parse_goal(r["task"]).kind for r in rows if r["success"]}
    for kind in won_kinds:  # every kind of task that was won has a procedure
        skill = repo.get(notes.procedure_skill_name(kind))
        assert skill is not None, kind
        proc = notes.Procedure.parse(skill.body)
        assert proc.kind == kind and proc.won >= 1
        task = next(r["task"] for r in rows if r["success"] and parse_goal(r["task"]).kind == kind)
        need = reading.needed(task)
        if need:  # the prose says what the executor needs to do for that kind, in its own reading
            assert reading.guidance(parse_goal(task), task, [skill]).said, skill.body


def test_skills_change_what_the_executor_does(train):
    """The same executor searches where a location skill points first."""
    game = next(g for g in train if g.task_type == "pick_and_place_simple")
    env = AlfworldEnv()
    plain = play(env, HeuristicExecutor(), None, game, 30, 5)
    first_visit = next(s.action for s in plain.steps if s.action.startswith("go to "))
    obj = parse_goal(game.task).obj
    first_place = first_visit.split()[-2]
    # a skill that says the object is never in the first place and always in another
    other = next(s.action.split()[-2] for s in plain.steps
                 if s.action.startswith("go to ") and s.action.split()[-2] != first_place)
    loc = notes.Locations(obj, {first_place: [0, 50], other: [50, 50]})
    repo = SkillRepo(None)
    repo.insert(notes.location_skill_name(obj), *loc.render())
    guided = play(env, HeuristicExecutor(), Retriever(repo, "bm25"), game, 30, 5)
    assert guided.retrieved == [notes.location_skill_name(obj)]
    assert next(s.action for s in guided.steps if s.action.startswith("go to ")).split()[-2] == other


def test_procedure_extraction_keeps_what_mattered():
    goal = parse_goal("put a hot apple in countertop")
    steps = [Step(a, o) for a, o in [
        ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed."),
        ("open fridge 1", "You open the fridge 1. The fridge 1 is open. In it, you see a apple 1."),
        ("take apple 1 from fridge 1", "You pick up the apple 1 from the fridge 1."),
        ("go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see nothing."),
        ("move apple 1 to countertop 1", "You move the apple 1 to the countertop 1."),
        ("take apple 1 from countertop 1", "You pick up the apple 1 from the countertop 1."),
        ("go to microwave 1", "You arrive at microwave 1. The microwave 1 is closed."),
        ("heat apple 1 with microwave 1", "You heat the apple 1 using the microwave 1."),
        ("go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see nothing."),
        ("move apple 1 to countertop 1", "You move the apple 1 to the countertop 1."),
    ]]
    traj = Trajectory("g", "put a hot apple in countertop", "pick_heat_then_place_in_recep",
                      steps=steps, won=True)
    procedure, pitfalls = extract_procedure(traj, goal)
    assert procedure == ["find a X and take it", "go to microwave", "heat the X with microwave",
                         "go to Y", "move the X to Y"]
    assert pitfalls == ["Putting the X in Y before you heat the X with the microwave did not finish the task."]
    repo = SkillRepo(None)
    HeuristicCurator().curate(traj, repo)
    assert repo.get("where-to-find-apple") is not None
    table = notes.Locations.parse("apple", repo.get("where-to-find-apple").body)
    assert "|" not in repo.get("where-to-find-apple").body  # prose, not a table
    assert table.counts["fridge"] == [1, 1] and table.counts["countertop"] == [0, 1]


def test_unmeasured_games_teach_nothing():
    repo = SkillRepo(None)
    traj = Trajectory("g", "put a apple in fridge", "pick_and_place_simple", won=None,
                      unmeasured_reason="TimeoutError: env")
    assert HeuristicCurator().curate(traj, repo) == [] and len(repo) == 0


def test_failing_procedure_is_deleted():
    repo = SkillRepo(None)
    proc = notes.Procedure("put a X in Y", ["find a X and take it", "go to Y", "move the X to Y"],
                           won=0, failed=2)
    repo.insert(notes.procedure_skill_name(proc.kind), *proc.render())
    traj = Trajectory("g", "put a apple in fridge", "pick_and_place_simple", won=False,
                      retrieved=["put-a-x-in-y"])
    ops = HeuristicCurator().curate(traj, repo)
    assert [(o.op, o.ok) for o in ops] == [("delete", True)] and "put-a-x-in-y" not in repo
