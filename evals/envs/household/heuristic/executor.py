"""A deterministic executor that explores systematically and follows what its skills say.

Without skills it searches receptacles in the order the room lists them, delivers the object to
the target, and if that does not finish the task, tries the commands that mention what the task
names (clean/heat/cool/use ... whatever the admissible list offers) one receptacle at a time.
With skills it does what they say in plain prose, whoever wrote them (reading.py: one grammar
over ALFWorld's verbs and nouns): it searches first where they say the object is, and does the
transformation the task asks for with the tool and in the order they give, before delivering.
What the skills do not say, it does as it would without them.
"""

from __future__ import annotations

from typing import Sequence

from skillos.evals.envs.household.heuristic import reading
from skillos.evals.envs.alfworld import text
from skillos.repo import Skill

# Commands that move the agent or objects around; anything else is a "special" verb to try.
BASIC_VERBS = {"go", "open", "close", "take", "move", "examine", "look", "inventory", "help"}
IDLE = "look"


class HeuristicExecutor:
    name = "heuristic"
    deterministic = True  # the same game and skills give the same play (training/curator/plays.py keeps them)

    def new_episode(self, task: str, skills: Sequence[Skill]) -> "HeuristicEpisode":
        return HeuristicEpisode(task, skills)


class HeuristicEpisode:
    def __init__(self, task: str, skills: Sequence[Skill]):
        self.goal = text.parse_goal(task)
        self.guide = reading.guidance(self.goal, task, skills) if self.goal and skills else reading.Guidance()
        self.followed_procedure = self.guide.said
        # what the agent has seen this episode
        self.receptacles: list[str] = []
        self.here: str | None = None
        self.contents: dict[str, list[str]] = {}
        self.closed: set[str] = set()
        self.visited: set[str] = set()
        self.holding: str | None = None
        self.placed: set[str] = set()
        self.delivered: tuple[str, str] | None = None  # (item, receptacle) of the last move
        self.tried: set[tuple[str, str]] = set()
        self.admissible: Sequence[str] = ()
        self._plan = None

    # -- the runner's interface -------------------------------------------------------------
    def act(self, observation: str, admissible: Sequence[str]) -> str:
        self.admissible = admissible
        if self._plan is None:
            self.receptacles = text.room_receptacles(observation)
            self._plan = self._play()
        else:
            self._observe(observation)
        try:
            return next(self._plan)
        except StopIteration:
            return IDLE

    # -- reading feedback -------------------------------------------------------------------
    def _observe(self, feedback: str) -> None:
        place = text.arrived_at(feedback)
        if place:
            self.here = place
            if text.is_closed(feedback):
                self.closed.add(place)
            else:
                self.closed.discard(place)
                self.contents[place] = text.seen_items(feedback)
                self.visited.add(place)
        elif feedback.startswith("You pick up the "):
            item, recep = feedback[len("You pick up the "):].rstrip(".").split(" from the ")
            self.holding = item
            if item in self.contents.get(recep, []):
                self.contents[recep].remove(item)
        elif feedback.startswith("You move the "):
            item, recep = feedback[len("You move the "):].rstrip(".").split(" to the ")
            self.holding = None
            self.contents.setdefault(recep, []).append(item)
            self.placed.add(item)
            self.delivered = (item, recep)
        elif feedback.startswith("On the ") and self.here:  # examine
            self.contents[self.here] = text.seen_items(feedback)
            self.visited.add(self.here)

    # -- moving around ----------------------------------------------------------------------
    def _goto(self, recep: str):
        if self.here == recep:
            return
        if f"go to {recep}" in self.admissible:
            yield f"go to {recep}"
        elif f"examine {recep}" in self.admissible:  # shares the agent's location
            self.here = recep
            yield f"examine {recep}"
        else:
            self.visited.add(recep)
        if recep in self.closed and f"open {recep}" in self.admissible:
            yield f"open {recep}"

    def _search_order(self, obj: str) -> list[str]:
        order = list(self.receptacles)
        if obj in self.guide.places:
            order.sort(key=lambda r: -self.guide.score(obj, text.kind_of(r)))  # stable: keeps room order
        return order

    def _find(self, obj: str):
        """Walk until an unplaced item of type `obj` is seen; return (item, receptacle)."""
        while True:
            for recep in self.receptacles:
                for item in self.contents.get(recep, []):
                    if text.kind_of(item) == obj and item not in self.placed:
                        return item, recep
            todo = [r for r in self._search_order(obj) if r not in self.visited]
            if not todo:
                return None, None
            yield from self._goto(todo[0])
            self.visited.add(todo[0])

    def _take(self, obj: str):
        if self.holding and text.kind_of(self.holding) == obj:
            return True
        item, recep = yield from self._find(obj)
        if item is None:
            return False
        yield from self._goto(recep)
        command = f"take {item} from {recep}"
        if command in self.admissible:
            yield command
        return self.holding == item

    def _instances(self, rtype: str) -> list[str]:
        return [r for r in self.receptacles if text.kind_of(r) == rtype]

    def _deliver(self):
        if not self.holding:
            return
        for recep in self._instances(self.goal.target)[:1]:
            yield from self._goto(recep)
            command = f"move {self.holding} to {recep}"
            if command in self.admissible:
                yield command

    # -- the plan ---------------------------------------------------------------------------
    def _play(self):
        if self.goal is None:
            return
        if self.guide.said:
            yield from self._follow()
        target_is_receptacle = bool(self._instances(self.goal.target))
        for _ in range(self.goal.count if target_is_receptacle else 1):
            if not (yield from self._take(self.goal.obj)):
                return
            if target_is_receptacle:
                yield from self._deliver()
        yield from self._try_special(target_is_receptacle)

    def _follow(self):
        """What the skills say about this task's transformation, before the usual delivery."""
        need = self.guide.need
        if need == "use":  # look at the object under a lamp: hold it, then turn the lamp on
            if not (yield from self._take(self.goal.obj)):
                return
            item, recep = yield from self._find(self.goal.target)
            if item:
                yield from self._goto(recep)
                if f"use {item}" in self.admissible:
                    yield f"use {item}"
        elif self.guide.transform_first:  # heat / cool / clean it first, then deliver as usual
            if not (yield from self._take(self.goal.obj)):
                return
            yield from self._transform(need, self.guide.tool)

    def _transform(self, verb: str, tool: str | None):
        """`verb` the held object with `tool` (a receptacle type); with no tool the skills name,
        or one that does not do it here, try the receptacles in room order."""
        places = self._instances(tool)[:1] if tool else []
        places += [r for r in self.receptacles if text.kind_of(r) not in self.guide.avoid | {tool}]
        for recep in places:
            yield from self._goto(recep)
            command = f"{verb} {self.holding} with {recep}"
            if self.holding and command in self.admissible:
                yield command
                return

    def _try_special(self, target_is_receptacle: bool):
        """Trial and error: at each receptacle, try commands that mention what the task names."""
        def named(command):
            words = command.split()
            if words[0] in BASIC_VERBS:
                return False
            items = _items(command)
            return self.holding in items or any(text.kind_of(i) == self.goal.target for i in items)

        seen_target = [r for r in self.receptacles
                       if any(text.kind_of(i) == self.goal.target for i in self.contents.get(r, []))]
        order = seen_target + [r for r in self.receptacles if r not in seen_target]
        bare_kinds = set()  # receptacle types that offered nothing to try: skip their twins
        for recep in order:
            if text.kind_of(recep) in bare_kinds:
                continue
            if self.holding is None and self.delivered:  # delivered, task not done: take it back
                item, place = self.delivered
                yield from self._goto(place)
                if f"take {item} from {place}" not in self.admissible:
                    return
                yield f"take {item} from {place}"
                self.placed.discard(item)
            yield from self._goto(recep)
            options = [c for c in self.admissible if named(c)]
            if not options:
                bare_kinds.add(text.kind_of(recep))
            for command in options:
                if (command, recep) in self.tried:
                    continue
                self.tried.add((command, recep))
                yield command
                if target_is_receptacle:
                    yield from self._deliver()
                    break


def _items(command: str) -> list[str]:
    words = command.split()
    return [f"{a} {b}" for a, b in zip(words, words[1:]) if b.isdigit()]
