"""A deterministic curator that writes down what trajectories showed, through the repo's
insert / update / delete only:

* where objects of each type were found (and where they were searched for and not found),
* which steps won a kind of task, taken from a won trajectory: the object taken, each command
  done to it since its last delivery that did not finish the task, and the delivery;
* what failed: a delivery that did not finish the task becomes a pitfall; a procedure that keeps
  failing when followed is deleted.

An unmeasured game (won is None) teaches nothing and is skipped.
"""

from __future__ import annotations

from skillos.evals.envs.household.heuristic import notes
from skillos.evals.envs.household.heuristic.executor import BASIC_VERBS
from skillos.evals.envs.alfworld import text
from skillos.evals.trajectory import Trajectory
from skillos.repo import OpResult, SkillRepo

MAX_PITFALLS = 5
DELETE_AFTER_FAILURES = 3


class HeuristicCurator:
    name = "heuristic"

    def curate(self, trajectory: Trajectory, repo: SkillRepo) -> list[OpResult]:
        goal = text.parse_goal(trajectory.task)
        if trajectory.won is None or goal is None:
            return []
        ops = self._record_locations(trajectory, goal, repo)
        ops += self._record_procedure(trajectory, goal, repo)
        return ops

    # -- where things were ------------------------------------------------------------------
    def _record_locations(self, traj: Trajectory, goal, repo: SkillRepo) -> list[OpResult]:
        views: dict[str, list[str]] = {}  # receptacle -> object types seen on first look
        for step in traj.steps:
            place = text.arrived_at(step.observation)
            if step.action.startswith("examine ") and step.observation.startswith("On the "):
                place = step.action[len("examine "):]
            if place and place not in views and not text.is_closed(step.observation):
                views[place] = [text.kind_of(i) for i in text.seen_items(step.observation)]
        if not views:
            return []
        objects = sorted({o for seen in views.values() for o in seen} | {goal.obj})
        ops = []
        for obj in objects:
            name = notes.location_skill_name(obj)
            existing = repo.get(name)
            loc = notes.Locations.parse(obj, existing.body) if existing else notes.Locations(obj)
            for place, seen in views.items():
                counts = loc.counts.setdefault(text.kind_of(place), [0, 0])
                counts[0] += obj in seen
                counts[1] += 1
            description, body = loc.render()
            ops.append(repo.update(name, description, body) if existing
                       else repo.insert(name, description, body))
        return ops

    # -- which steps won --------------------------------------------------------------------
    def _record_procedure(self, traj: Trajectory, goal, repo: SkillRepo) -> list[OpResult]:
        name = notes.procedure_skill_name(goal.kind)
        existing = repo.get(name)
        proc = notes.Procedure.parse(existing.body) if existing else None
        if not traj.won:
            if proc is None or name not in traj.retrieved:
                return []
            proc.failed += 1
            if proc.failed >= DELETE_AFTER_FAILURES and proc.failed > 2 * proc.won:
                return [repo.delete(name)]
            return [repo.update(name, *proc.render())]
        steps, pitfalls = extract_procedure(traj, goal)
        if not steps:
            return []
        if proc is None:
            proc = notes.Procedure(goal.kind, steps)
        elif steps != proc.steps and (len(steps) < len(proc.steps) or proc.won <= proc.failed):
            proc = notes.Procedure(goal.kind, steps, pitfalls=proc.pitfalls)
        if steps == proc.steps:
            proc.won += 1
        for pitfall in pitfalls:
            if pitfall not in proc.pitfalls and len(proc.pitfalls) < MAX_PITFALLS:
                proc.pitfalls.append(pitfall)
        description, body = proc.render()
        return [repo.update(name, description, body) if existing else repo.insert(name, description, body)]


def extract_procedure(traj: Trajectory, goal) -> tuple[list[str], list[str]]:
    """The abstract steps that won, and pitfalls, from a won trajectory.

    A delivery of the object to the target that was later taken back did not finish the task;
    only the commands done to the object since then are kept as the steps that mattered, and
    each of them becomes a pitfall: delivering before it did not complete the task.
    """
    deliveries = []  # [item, specials, active]
    specials: dict[str, list] = {}  # item -> (verb, place) done since its last failed delivery
    failed_before: set[str] = set()  # items with a failed delivery before their current specials
    for step in traj.steps:
        if step.observation == "Nothing happens." or step.coerced:
            continue
        words = step.action.split()
        if step.action.startswith("take ") and " from " in step.action:
            item = step.action[5:].split(" from ")[0]
            for d in deliveries:
                if d[0] == item and d[2]:  # taken back: that delivery did not finish the task
                    d[2] = False
                    specials[item] = []
                    failed_before.add(item)
        elif step.action.startswith("move ") and " to " in step.action:
            item, place = step.action[5:].split(" to ", 1)
            if text.kind_of(item) == goal.obj and text.kind_of(place) == goal.target:
                deliveries.append([item, list(specials.get(item, [])), True])
        elif step.action.startswith("use ") and text.kind_of(step.action[4:]) == goal.target:
            return ["find a X and take it", "find the Y and use it"], []
        elif words and words[0] not in BASIC_VERBS and " with " in step.action:
            item, place = step.action[len(words[0]) + 1:].split(" with ", 1)
            if text.kind_of(item) == goal.obj:
                specials.setdefault(item, []).append((words[0], text.kind_of(place)))
    steps, pitfalls = [], []
    for i, (item, done, _) in enumerate(d for d in deliveries if d[2]):
        steps.append("find a X and take it" if i == 0 else "find another X and take it")
        for verb, place in done:
            steps += [f"go to {place}", f"{verb} the X with {place}"]
            if item in failed_before:
                pitfalls.append(notes.pitfall(f"{verb} the X with {place}"))
        steps += ["go to Y", "move the X to Y"]
    return steps, pitfalls
