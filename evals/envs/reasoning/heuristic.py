"""The `heuristic` backend on reasoning: a deterministic solver and curator that need no model.

The solver knows a repertoire of methods (each reads the numbers of a problem, or its options,
and computes an answer) but not which method a kind of problem needs. Without a skill it picks
one of the methods that fit the problem's shape, by a seeded guess. With a retrieved skill for
problems like this one it uses the method the skill says won, and avoids the ones it says
failed. The curator writes those skills from what trajectories showed: the method the answer
names and whether it was graded correct. The markdown is the only memory, nothing hidden.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

from skillos.evals.envs.reasoning.datasets import rng
from skillos.evals.envs.reasoning.generator import latex_fraction
from skillos.evals.trajectory import Trajectory
from skillos.repo import OpResult, Skill, SkillRepo

CUE_WORDS = 5
_METHOD = re.compile(r"^Method: ([a-z-]+)\.", re.MULTILINE)
_ROW = re.compile(r"^\|\s*([a-z-]+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|$")
_CUE = re.compile(r"^# Problems like: (.+)$", re.MULTILINE)
_OPTION = re.compile(r"^\(([A-D])\) (.+)$", re.MULTILINE)


def _prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, math.isqrt(n) + 1))


# name -> (arity, method over the problem's integers); choice methods take the options instead.
NUMBER_METHODS = {
    "power-then-remainder": (3, lambda a, b, m: pow(a, b, m)),
    "product-then-remainder": (3, lambda a, b, m: a * b % m),
    "isolate-the-unknown": (3, lambda a, b, c: Fraction(c - b, a)),
    "add-then-divide": (3, lambda a, b, c: Fraction(c + b, a)),
    "arithmetic-series-formula": (4, lambda n, a, a1, a2: n * (2 * a + (n - 1) * (a1 - a)) // 2),
    "last-term-times-count": (4, lambda n, a, a1, a2: n * (a + (n - 1) * (a1 - a))),
    "binomial-coefficient": (2, lambda k, n: math.comb(n, k)),
    "ordered-selections": (2, lambda k, n: math.perm(n, k)),
    "euclid-gcd": (2, lambda a, b: math.gcd(a, b)),
    "smaller-number": (2, lambda a, b: min(a, b)),
    "count-divisors": (1, lambda n: sum(n % d == 0 for d in range(1, n + 1))),
    "count-divisors-up-to-root": (1, lambda n: sum(n % d == 0 for d in range(1, math.isqrt(n) + 1))),
}
CHOICE_METHODS = {
    "test-each-option-for-primality": lambda opts: next((c for c, o in opts if o.isdigit() and _prime(int(o))), None),
    "pick-the-largest-option": lambda opts: max(opts, key=lambda co: float(co[1]) if co[1].isdigit() else 0)[0],
    "pick-the-first-option": lambda opts: opts[0][0],
}


def cue(problem: str) -> str:
    """What problems of one kind share: their first words, without numbers or formulas."""
    words = [w.strip(".,:;?!").lower() for w in problem.split()]
    words = [w for w in words if w.isalpha()]
    return " ".join(words[:CUE_WORDS])


def skill_name(problem_cue: str) -> str:
    return ("problems-like-" + re.sub(r"[^a-z0-9]+", "-", problem_cue)).strip("-")[:64].strip("-")


@dataclass
class MethodRecord:
    """A skill's table: per method, times it won and failed when used on problems like these."""
    cue: str
    counts: dict = field(default_factory=dict)  # method -> [won, failed]

    def best(self) -> str | None:
        won = [(m, w, f) for m, (w, f) in self.counts.items() if w > 0]
        return max(won, key=lambda t: ((t[1] + 1) / (t[1] + t[2] + 2), t[0]))[0] if won else None

    def failed(self) -> set[str]:
        return {m for m, (w, f) in self.counts.items() if f > 0 and w == 0}

    def render(self) -> tuple[str, str]:
        best = self.best()
        description = (f"How to solve problems like \"{self.cue} ...\": "
                       + (f"use the method {best}" if best else "methods that failed so far")
                       + " (a record of methods tried on such problems).")
        lines = [f"# Problems like: {self.cue}", "",
                 "Methods tried on such problems: `won` times the answer was graded correct, "
                 "`failed` times it was wrong. Use the method that won; avoid the ones that only failed.", "",
                 "| method | won | failed |", "|---|---|---|"]
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1][0], kv[1][1], kv[0]))
        lines += [f"| {m} | {w} | {f} |" for m, (w, f) in ranked]
        return description, "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, body: str) -> "MethodRecord | None":
        found = _CUE.search(body)
        if not found:
            return None
        counts = {}
        for line in body.splitlines():
            m = _ROW.match(line.strip())
            if m:
                counts[m.group(1)] = [int(m.group(2)), int(m.group(3))]
        return cls(found.group(1).strip(), counts)


def _options(problem: str) -> list[tuple[str, str]]:
    return [(c, o.strip()) for c, o in _OPTION.findall(problem)]


def _numbers(problem: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", problem)]


def applicable(problem: str) -> dict:
    """The methods that fit the problem's shape: name -> () -> answer text for the reply."""
    options = _options(problem)
    if options:
        return {name: (lambda f=f: f(options)) for name, f in CHOICE_METHODS.items()}
    nums = _numbers(problem)
    return {name: (lambda f=f: f(*nums)) for name, (arity, f) in NUMBER_METHODS.items() if arity == len(nums)}


class HeuristicReasoner:
    name = "heuristic"

    def new_episode(self, task: str, skills: Sequence[Skill]) -> "ReasonerEpisode":
        return ReasonerEpisode(task, skills)


class ReasonerEpisode:
    def __init__(self, task: str, skills: Sequence[Skill]):
        self.task, self.record, self.source = task, None, None
        mine = cue(task)
        for skill in skills:
            record = MethodRecord.parse(skill.body)
            if record and record.cue == mine:
                self.record, self.source = record, skill.name
                break

    def act(self, observation: str, admissible: Sequence[str] = ()) -> str:
        problem = observation or self.task
        methods = applicable(problem)
        if not methods:
            return "I do not know a method for this problem, so I give no final answer."
        chosen, why = None, "a guess: no skill covers problems like this"
        if self.record:
            best = self.record.best()
            if best in methods:
                chosen, why = best, f"the skill {self.source} says it won"
            else:
                untried = [m for m in methods if m not in self.record.failed()]
                if untried:
                    methods = {m: methods[m] for m in untried}
                    why = f"a guess among methods the skill {self.source} does not mark as failed"
        if chosen is None:
            names = sorted(methods)
            chosen = names[rng("skillos-guess", problem).randrange(len(names))]
        value = methods[chosen]()
        lines = [f"Method: {chosen}.", f"Why: {why}."]
        if value is None:
            return "\n".join(lines + ["The method gave no answer."])
        if isinstance(value, str):  # a choice letter
            return "\n".join(lines + [f"The answer is ({value})."])
        shown = latex_fraction(value) if isinstance(value, Fraction) else str(value)
        return "\n".join(lines + [f"So the final answer is $\\boxed{{{shown}}}$."])


class ReasoningCurator:
    """Keeps one skill per kind of problem: the record of each method used on it."""

    name = "heuristic"

    def curate(self, trajectory: Trajectory, repo: SkillRepo) -> list[OpResult]:
        if trajectory.won is None or not trajectory.steps:
            return []
        used = _METHOD.search(trajectory.steps[-1].action)
        problem_cue = cue(trajectory.task)
        if not used or not problem_cue:
            return []
        name = skill_name(problem_cue)
        existing = repo.get(name)
        record = (MethodRecord.parse(existing.body) if existing else None) or MethodRecord(problem_cue)
        counts = record.counts.setdefault(used.group(1), [0, 0])
        counts[0 if trajectory.won else 1] += 1
        description, body = record.render()
        return [repo.update(name, description, body) if existing else repo.insert(name, description, body)]
