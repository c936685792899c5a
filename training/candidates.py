"""The candidate loop `skillos optimize` and a sleep night share: calibrate, then at each step
propose → evaluate on validation → gate → record → accept, or remember the rejection.

What differs between the two is passed in as narrow callables: how a step proposes (a minibatch
of games and skill edits, or failed replayed tasks and learned lines), how a candidate is
measured, how the gate is read (optimize's destroyed-signal canary, sleep's `no_regress`), how a
tried candidate is recorded (history, ledger, echo), and what follows a step (optimize saves its
state for `--resume`). The order of the steps, the counting and the accept/remember decision are
written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from skillos.errors import SkillosError
from skillos.evals.stats import CandidateVerdict, accept_candidate


class CalibrationFailed(SkillosError):
    """The gate accepted the seed skill over an identical copy: it would accept noise."""


def calibrate(first: dict, second: dict, mode: str, k: float, max_unmeasured: float) -> CandidateVerdict:
    """A/A: `first` and `second` are the validation outcomes (task id -> True/False/None) of two
    copies of the seed skill. Returns the gate's verdict, which must not be accept."""
    verdict = accept_candidate(first, second, mode, k, max_unmeasured)
    if verdict.verdict == "accept":
        raise CalibrationFailed(f"A/A calibration: the {mode} gate accepted a copy of the seed skill over "
                                f"itself ({verdict.reason}); it would accept noise. Raise optimize.gate.k, "
                                "use the paired mode, or validate on more tasks")
    return verdict


def calibrated(measure_first: Callable[[], dict], measure_copy: Callable[[], dict],
               gate_args: tuple) -> tuple[dict, CandidateVerdict]:
    """The seed's validation outcomes and the A/A verdict, measured before any candidate: a gate
    that accepts a copy of the seed over itself would accept noise, so nothing is spent on one."""
    first = measure_first()
    return first, calibrate(first, measure_copy(), *gate_args)


def broke(incumbent: dict, candidate: dict) -> list:
    """Validation tasks that passed with the incumbent and fail with the candidate."""
    return sorted(t for t in incumbent if incumbent[t] is True and candidate.get(t) is False)


def fixed(incumbent: dict, candidate: dict) -> list:
    """Validation tasks that failed with the incumbent and pass with the candidate."""
    return sorted(t for t in incumbent if incumbent[t] is False and candidate.get(t) is True)


@dataclass
class Candidate:
    """One step's proposal: the incumbent with the edits applied."""

    skill: object  # a SkillRepo (optimize) or a SKILL.md text (sleep)
    edits: list  # one summary per edit, as the history and the rejected memory show it
    keys: list  # the memory's key per edit: a rejected key is not proposed again
    epoch: int  # where the rejected memory files it (a night's number for sleep)
    step: int
    detail: object = None  # what only the recorder reads (the Edit objects, the failed tasks)


@dataclass
class Standing:
    """Where the loop stands. Updated in place, so a caller that catches a stop raised mid-step
    (a budget cap, an outage) still reads what was accepted before it."""

    skill: object
    validation: dict  # the incumbent's validation outcomes: task id -> True/False/None
    tried: int = 0
    accepted: int = 0
    history: list = field(default_factory=list)  # what `record` returned for each tried candidate


def run_candidates(steps: Iterable[int], standing: Standing, memory, *,
                   propose: Callable[[int, Standing], Candidate | None],
                   evaluate: Callable[[Candidate], dict],
                   judge: Callable[[int, dict, dict], CandidateVerdict],
                   record: Callable[[Candidate, CandidateVerdict, Standing, dict], object],
                   after_step: Callable[[int, Standing], None] | None = None) -> Standing:
    """At each step: `propose` (None: no candidate this step), `evaluate` the candidate on the
    validation tasks, `judge` it against the incumbent, `record` it (counted in `tried` first,
    so the record can number it), then accept it as the incumbent or add it to `memory` with
    what it broke and fixed. `after_step` runs after every step, with or without a candidate."""
    for step in steps:
        candidate = propose(step, standing)
        if candidate is not None:
            candidate_val = evaluate(candidate)
            verdict = judge(step, standing.validation, candidate_val)
            standing.tried += 1
            standing.history.append(record(candidate, verdict, standing, candidate_val))
            if verdict.verdict == "accept":
                standing.skill, standing.validation = candidate.skill, candidate_val
                standing.accepted += 1
            else:
                memory.add("; ".join(candidate.edits), verdict, standing.validation, candidate_val,
                           candidate.epoch, candidate.step, candidate.keys)
        if after_step is not None:
            after_step(step, standing)
    return standing
