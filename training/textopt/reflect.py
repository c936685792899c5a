"""Reflect → aggregate → update, SkillOpt's textual gradient: before a step proposes, each
trajectory of its minibatch (failed and won) gets a reflection (what went wrong or right, citing
the line of skill text it used), and the reflections are aggregated into one textual gradient
that the proposer reads.

Two writers of the same record: `rules` (no model: what the trajectory's own steps show, and the
skill line that shares the most words with what it did) so CPU runs keep working, and a model
through the one chat interface (`ModelReflector`: a call per trajectory, one to aggregate). A
failed model call falls back to the rules for that record and says so in its `source`: the step
never loses its gradient to an outage. The gradient also carries its structured focus (units to
revise, units to keep, task kinds with no skill), which the heuristic proposer orders its edits by.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from skillos.evals.backends.chat import BackendError
from skillos.evals.curation import curator_input

_WORD = re.compile(r"[a-z]+")
NOTHING = "Nothing happens."


@dataclass
class Reflection:
    game_id: str
    task: str
    task_type: str
    won: bool
    text: str  # what went wrong / right
    cites: list = field(default_factory=list)  # [{"unit": skill or section name, "line": the text cited}]
    source: str = "rules"


@dataclass
class Gradient:
    text: str
    revise: list = field(default_factory=list)  # units failed games read
    keep: list = field(default_factory=list)  # units only won games read
    missing: list = field(default_factory=list)  # task kinds that failed with no unit read
    source: str = "rules"


def _read(traj, units) -> list:
    return [s for s in (units.get(n) for n in traj.retrieved) if s is not None]


def _cite(traj, read: list, limit: int = 2) -> list[dict]:
    """Per unit read, the line sharing the most words with the task and the actions taken."""
    words = set(_WORD.findall(traj.task.lower())) | {w for s in traj.steps for w in _WORD.findall(s.action.lower())}
    best = []
    for skill in read:
        lines = [x.strip() for x in skill.body.splitlines() if x.strip() and not x.lstrip().startswith(("#", "<!--"))]
        if not lines:
            continue
        score, line = max(((len(words & set(_WORD.findall(x.lower()))), -i), x) for i, x in enumerate(lines))
        best.append((score[0], skill.name, line))
    best.sort(key=lambda b: -b[0])
    return [{"unit": name, "line": line[:200]} for _, name, line in best[:limit]]


def reflect_rules(traj, units) -> Reflection:
    read, steps = _read(traj, units), traj.steps
    idle = sum(s.observation.strip() == NOTHING for s in steps)
    cites = _cite(traj, read)
    used = ", ".join(f'{c["unit"]} ("{c["line"]}")' for c in cites)
    if traj.won:
        text = (f"won in {len(steps)} steps following {used}: keep what it says" if cites else
                f"won in {len(steps)} steps with no skill: write down the steps that won ({traj.task_type})")
    else:
        why = [f"{idle} of {len(steps)} actions did nothing"] if idle else []
        if traj.coerced:
            why.append(f"{traj.coerced} actions were not admissible")
        if steps:
            why.append(f"last action {steps[-1].action!r}")
        text = (f"failed after {len(steps)} steps ({'; '.join(why) or 'no action'}); "
                + (f"it followed {used}: revise that guidance" if cites else
                   f"no skill covered it: add one for {traj.task_type} tasks"))
    return Reflection(traj.game_id, traj.task, traj.task_type, bool(traj.won), text, cites)


def aggregate_rules(reflections: list[Reflection]) -> Gradient:
    """One textual gradient: which units the failures cite (revise), which only wins cite (keep),
    which task kinds failed with no unit read (missing), with the counts behind each line."""
    failed_units, won_units, missing, unread_wins = Counter(), Counter(), Counter(), Counter()
    quote = {}
    for r in reflections:
        for c in r.cites:
            (won_units if r.won else failed_units)[c["unit"]] += 1
            quote.setdefault(c["unit"], c["line"])
        if not r.cites:
            (unread_wins if r.won else missing)[r.task_type] += 1
    n_failed = sum(not r.won for r in reflections)
    lines = [f"Textual gradient from {len(reflections)} reflections ({n_failed} failed, "
             f"{len(reflections) - n_failed} won):"]
    revise = sorted(failed_units, key=lambda u: (-failed_units[u], u))
    keep = sorted((u for u in won_units if u not in failed_units), key=lambda u: (-won_units[u], u))
    for u in revise:
        lines.append(f'- revise {u}: read in {failed_units[u]} failed and {won_units[u]} won games; '
                     f'cited: "{quote[u]}"')
    for kind in sorted(missing):
        lines.append(f"- add: {missing[kind]} failed {kind} games read no skill")
    for kind in sorted(unread_wins):
        lines.append(f"- add: {unread_wins[kind]} won {kind} games read no skill; write down what won")
    for u in keep:
        lines.append(f"- keep {u}: read in {won_units[u]} won games and no failed one")
    if len(lines) == 1:
        lines.append("- nothing measured to learn from")
    return Gradient("\n".join(lines), revise, keep, sorted(missing))


def reflect_all(reflector, trajectories: list, units) -> tuple[list[Reflection], Gradient]:
    """Reflections of the measured trajectories (an unmeasured game teaches nothing) and their
    aggregate, by `reflector` (None: the rules)."""
    measured = [t for t in trajectories if t.won is not None]
    if reflector is None:
        reflections = [reflect_rules(t, units) for t in measured]
        return reflections, aggregate_rules(reflections)
    reflections = [reflector.reflect(t, units) for t in measured]
    return reflections, reflector.aggregate(reflections)


def step_record(trajectories: list, reflections: list[Reflection], gradient: Gradient) -> dict:
    """What the step record shows of the reflect → aggregate stage."""
    return {"reflections": len(reflections), "reflected_failed": sum(not r.won for r in reflections),
            "reflected_won": sum(r.won for r in reflections),
            "unmeasured_not_reflected": sum(t.won is None for t in trajectories),
            "reflection_records": [asdict(r) for r in reflections], "gradient": gradient.text,
            "gradient_source": gradient.source}


def order_by_gradient(edits: list, gradient: Gradient | None) -> list:
    """The heuristic proposer's update rule: edits the gradient asks for first (a unit failures
    cited, then new units when games read none), edits to units it says to keep last; the step's
    budget then admits from the front."""
    if gradient is None:
        return list(edits)

    def rank(e) -> int:
        if e.name in gradient.revise:
            return 0
        if e.op == "add":
            return 1
        return 3 if e.name in gradient.keep else 2

    return sorted(edits, key=rank)


class ModelReflector:
    """Reflections and their aggregate by a model backend (the chat interface the model-backed
    proposer uses)."""

    REFLECT = ("An agent read the skills below and then played the task below. In at most four sentences say what "
               "went {how} and which line of the skills caused it; quote that line exactly in double quotes.")
    AGGREGATE = ("Below are reflections on several games an agent played with its skills. Aggregate them into one "
                 "textual gradient: a short list of changes to make to the skills (revise, add, delete, keep), each "
                 "with the reflections that ask for it. Reply with the list only.")

    def __init__(self, chat, name: str):
        self.chat, self.name = chat, name

    def reflect(self, traj, units) -> Reflection:
        read = _read(traj, units)
        skills = "\n\n".join(s.to_markdown() for s in read) or "(it read no skill)"
        messages = [{"role": "system", "content": self.REFLECT.format(how="right" if traj.won else "wrong")},
                    {"role": "user", "content": f"Skills read:\n{skills}\n\n{curator_input(traj)}"}]
        try:
            reply = self.chat.chat(messages).text.strip()
        except BackendError as exc:
            reply, failed = "", f"model failed: {str(exc)[:120]}"
        else:
            failed = "" if reply else "the model replied nothing"
        if failed:  # the rules' reflection, said as theirs: never an empty one kept as the model's
            r = reflect_rules(traj, units)
            r.source = f"rules ({failed})"
            return r
        cites = [{"unit": s.name, "line": q} for q in re.findall(r'"([^"\n]{3,200})"', reply)
                 for s in read if q in s.body][:4]
        return Reflection(traj.game_id, traj.task, traj.task_type, bool(traj.won), reply[:2000], cites, self.name)

    def aggregate(self, reflections: list[Reflection]) -> Gradient:
        rules = aggregate_rules(reflections)
        if not reflections:
            return rules
        listed = "\n".join(f"{i + 1}. [{'won' if r.won else 'failed'}] {r.task}: {r.text}"
                           for i, r in enumerate(reflections))
        try:
            text = self.chat.chat([{"role": "system", "content": self.AGGREGATE},
                                   {"role": "user", "content": listed}]).text.strip()
        except BackendError as exc:
            rules.source = f"rules (model failed: {str(exc)[:120]})"
            return rules
        if not text:  # the rules' gradient, said as theirs, not the model's
            rules.source = "rules (the model replied nothing)"
            return rules
        return Gradient(text[:4000], rules.revise, rules.keep, rules.missing, self.name)
