"""The candidate loop `skillos optimize` and a sleep night share, and the bookkeeping it repeats:
calibrate, then at each step propose → evaluate on validation → gate → record → accept, or
remember the rejection; at the end, seed vs best on the sealed test split, read once.

What differs between the two is one small object (`Search`): how a step proposes (a minibatch
of games and skill edits, or failed replayed tasks and learned lines), how a candidate is
measured, how the gate is read (optimize's destroyed-signal canary, sleep's `no_regress`), the
history row it keeps, and what follows a step (optimize saves its state for `--resume`). The
order of the steps, the counting, the accept/remember decision, the paired numbers, the history
file, the ledger's candidate rows and the sealed report are written once, here (`Books`,
`sealed_report`).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Protocol

from skillos.config.optimize import SCHEDULES
from skillos.errors import SkillosError
from skillos.evals.stats import CandidateVerdict, accept_candidate
from skillos.files import write_atomic
from skillos.evals import stats
from skillos.safety import read_json_file


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


class Search(Protocol):
    """What one run's search supplies to the loop (optimize's and a sleep night's)."""

    def propose(self, step: int, now: Standing) -> Candidate | None:
        """This step's candidate, or None: no candidate this step."""

    def evaluate(self, candidate: Candidate) -> dict:
        """The candidate's validation outcomes: task id -> True/False/None."""

    def judge(self, step: int, incumbent: dict, candidate: dict) -> CandidateVerdict:
        """The gate's verdict on the candidate against the incumbent."""

    def describe(self, candidate: Candidate, verdict: CandidateVerdict, now: Standing, candidate_val: dict,
                 paired) -> Described:
        """The candidate's history row, ledger diff and edits, and echoed line (`paired`: the
        real paired numbers, stats.compare of incumbent and candidate)."""

    def after_step(self, step: int, now: Standing) -> None:
        """Runs after every step, with or without a candidate."""


@dataclass
class Described:
    row: dict  # its history row, as the run's history file keeps it
    diff: str  # the change, as the ledger's candidate row shows it
    edits: str  # JSON of what the ledger keeps beside the diff
    line: str  # what is echoed


@dataclass
class Books:
    """Where every tried candidate is recorded: a row of the run's history file, a candidate row
    in the ledger (with the paired rates and CI beside the gate's numbers) and one echoed line."""

    history: Path
    ledger: object | None
    run_id: int | None
    echo: Callable
    stats_args: dict  # alpha, power, n_boot: the eval section's, for the paired numbers

    def record(self, candidate: Candidate, verdict: CandidateVerdict, now: Standing, candidate_val: dict,
               search: Search) -> dict:
        # the paired numbers are the real outcomes even where a canary blinds the gate
        paired = stats.compare(now.validation, candidate_val, names=("candidate", "incumbent"), **self.stats_args)
        said = search.describe(candidate, verdict, now, candidate_val, paired)
        with open(self.history, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(said.row) + "\n")
        if self.ledger is not None:
            self.ledger.add_candidate(
                self.run_id, epoch=candidate.epoch, step=candidate.step, diff=said.diff, verdict=verdict.verdict,
                mode=verdict.mode, incumbent_rate=paired.control_rate, candidate_rate=paired.treatment_rate,
                mean_difference=verdict.mean_difference, se=verdict.se, threshold=verdict.threshold,
                ci_low=paired.ci_low, ci_high=paired.ci_high, n_tasks=verdict.n_tasks, n_paired=verdict.n_paired,
                n_unmeasured=verdict.n_unmeasured, edits=said.edits)
        self.echo(said.line)
        return said.row


def run_candidates(steps: Iterable[int], standing: Standing, memory, search: Search, books: Books) -> Standing:
    """At each step: propose (None: no candidate this step), evaluate the candidate on the
    validation tasks, judge it against the incumbent, record it (counted in `tried` first, so the
    record can number it), then accept it as the incumbent or add it to `memory` with what it
    broke and fixed. `search.after_step` runs after every step, with or without a candidate."""
    for step in steps:
        candidate = search.propose(step, standing)
        if candidate is not None:
            candidate_val = search.evaluate(candidate)
            verdict = search.judge(step, standing.validation, candidate_val)
            standing.tried += 1
            standing.history.append(books.record(candidate, verdict, standing, candidate_val, search))
            if verdict.verdict == "accept":
                standing.skill, standing.validation = candidate.skill, candidate_val
                standing.accepted += 1
            else:
                memory.add("; ".join(candidate.edits), verdict, standing.validation, candidate_val,
                           candidate.epoch, candidate.step, candidate.keys)
        search.after_step(step, standing)
    return standing


def sealed_report(cfg, comparison, tried: int, accepted: int, aa, seed: dict, best: dict, size: int, out: Path,
                  gate_mode: str) -> dict:
    """Seed vs best on the sealed test split. The best skill was chosen among `tried`
    candidates, so the claim is judged in a family of that size (Bonferroni), by the one
    verdict function."""
    problems = {"best": [f"no candidate passed the gate ({tried} tried): the best skill set is the seed"]
                } if accepted == 0 else {}
    verdict = stats.verdicts({"best": comparison}, alpha=cfg.eval.alpha, correction="bonferroni",
                             family=f"{tried} candidates tried", family_size=max(1, tried),
                             problems=problems, worthwhile=cfg.experiment.expected_effect)["best"]
    return {"verdict": verdict.line(), "decision": verdict.to_dict(), "candidates_tried": tried,
            "accepted": accepted, "best_skills": size, "best_skill": str(out / "best_skill"),
            "gate": gate_mode, "calibration": aa.to_dict(), "seed": seed, "best": best,
            "comparison": comparison.to_dict(), "p_corrected": verdict.p_adjusted}


# -- what both remember and read -----------------------------------------------------------------
def edits_allowed(step: int, total_steps: int, start: int, end: int, schedule: str) -> int:
    """The budget of step `step` (0-based) of `total_steps` (optimize: changed lines; sleep: lines
    added): `start` at the first step, `end` at the last, never below 1."""
    if schedule not in SCHEDULES:  # the config checks its own; this guards a direct caller
        raise SkillosError(f"optimize.schedule: {schedule!r} is not one of {', '.join(SCHEDULES)}")
    if schedule == "constant" or total_steps <= 1:
        return max(1, start)
    t = min(max(step, 0), total_steps - 1) / (total_steps - 1)
    weight = (1 + math.cos(math.pi * t)) / 2 if schedule == "cosine" else 1 - t
    return max(1, round(end + (start - end) * weight))


@dataclass
class Rejected:
    edit: str  # the edit, as the optimizer proposed it (a short diff or summary)
    verdict: str  # reject | indecisive
    broke: list = field(default_factory=list)  # validation tasks that passed before and failed with it
    fixed: list = field(default_factory=list)  # validation tasks that failed before and passed with it
    epoch: int = 0
    step: int = 0
    keys: list = field(default_factory=list)  # Edit.key() of each edit in the rejected candidate


class RejectedMemory:
    """Rejected edits across the whole run, saved beside it (`rejected.json`) so a resumed run
    keeps them too."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else None
        self.items: list[Rejected] = []
        if self.path and (self.path.is_file() or self.path.is_symlink() or self.path.exists()):
            self.items = read_rejected(self.path)

    def keep(self, before) -> None:
        """Keep only the rejections of steps `before(epoch, step)` says a resumed run has saved."""
        self.items = [r for r in self.items if before(r.epoch, r.step)]
        if self.path:
            write_atomic(self.path, json.dumps([asdict(r) for r in self.items], indent=1))

    def add(self, edit: str, verdict: CandidateVerdict, incumbent: dict, candidate: dict, epoch: int, step: int,
            keys: list | None = None) -> None:
        self.items.append(Rejected(edit, verdict.verdict, broke(incumbent, candidate), fixed(incumbent, candidate),
                                   epoch, step, list(keys or [])))
        if self.path:

            write_atomic(self.path, json.dumps([asdict(r) for r in self.items], indent=1))

    def steering(self, limit: int = 10) -> str:
        """The last `limit` rejected edits, for the optimizer's prompt."""
        if not self.items:
            return "No edit has been rejected yet."
        lines = [f"Rejected edits so far ({len(self.items)}; the last {min(limit, len(self.items))} shown). "
                 "Do not propose them again; keep what they fixed without what they broke:"]
        for r in self.items[-limit:]:
            lines.append(f"- epoch {r.epoch} step {r.step} ({r.verdict}): {r.edit} | broke {len(r.broke)}: "
                         f"{', '.join(r.broke[:5]) or '-'} | fixed {len(r.fixed)}: {', '.join(r.fixed[:5]) or '-'}")
        return "\n".join(lines)


def read_rejected(path: Path) -> list[Rejected]:
    """rejected.json, whole or a one-line error (never a traceback, never half of it)."""
    data = read_json_file(path, "rejected-edit memory", expect=list)
    names = {f for f in Rejected.__dataclass_fields__}
    items = []
    for i, r in enumerate(data):
        if not isinstance(r, dict) or not {"edit", "verdict"} <= set(r) or set(r) - names \
                or not all(isinstance(r.get(k, []), list) for k in ("broke", "fixed", "keys")) \
                or not all(isinstance(r.get(k, 0), int) and not isinstance(r.get(k, 0), bool) for k in ("epoch", "step")):
            raise SkillosError(f"{path}: damaged rejected-edit memory (entry {i + 1}); move it away to start the "
                               "memory over, or rerun without --resume")
        items.append(Rejected(**r))
    return items


class SealedSplit:
    """The test split: `read()` once, at the end. The seal is kept in the ledger, keyed by the
    experiment's name and the split's content hash, so no rerun, new output folder or other
    process reads the same games twice; a file in the run's folder says when it was read (and
    seals a run that has no ledger)."""

    def __init__(self, games: list, seal: Path, ledger=None, experiment: str = "", override: str | None = None):
        self._games = list(games)
        self.seal, self.ledger, self.experiment, self.override = Path(seal), ledger, experiment, override

    @property
    def content_hash(self) -> str:
        return hashlib.sha256("|".join(sorted(g.content_hash for g in self._games)).encode()).hexdigest()

    @property
    def sealed(self) -> bool:
        return not self.seal.exists()

    def check_unread(self) -> None:
        """Refuse now, before any compute, a split this run could not read at its end: its seal
        file exists, or the ledger has a read of it and no person's --unseal was given."""
        if self.seal.exists():
            raise SkillosError(f"the sealed test split was already read ({self.seal.read_text(errors='replace').strip()[:200]}); "
                               "a second read would make it a validation split")
        if self.ledger is not None and not (self.override or "").strip():
            reads = self.ledger.seal_reads(self.experiment, self.content_hash)
            if reads:
                first = reads[0]
                raise SkillosError(
                    f"the sealed test split of {self.experiment!r} (content {self.content_hash[:12]}) was already "
                    f"read {len(reads)} time(s), first at {first['created_at']} into {first['output']}; refused "
                    "before any game is played. A person may override with --unseal \"reason\" (recorded)")

    def reread(self, why: str) -> list:
        """The games again for the run that read them, whose read was cut off before its report
        (no second seal: the same look); refused when this run has no read on record."""
        if not self.seal.exists():
            raise SkillosError(f"{self.seal}: this run never read its sealed test split; nothing to complete")
        if self.ledger is not None and not any(r["output"] == str(self.seal.parent.resolve()) for r in
                                               self.ledger.seal_reads(self.experiment, self.content_hash)):
            raise SkillosError(f"{self.seal}: the ledger holds no read of this split into {self.seal.parent}; "
                               "completing it would be an unrecorded look")
        with open(self.seal, "a") as fh:
            fh.write(why + "\n")
        return list(self._games)

    def read(self, why: str) -> list:
        import os

        self.seal.parent.mkdir(parents=True, exist_ok=True)
        try:  # create-if-absent is one atomic step: two readers cannot both get the games
            fd = os.open(self.seal, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise SkillosError(f"the sealed test split was already read ({self.seal.read_text().strip()}); "
                               "a second read would make it a validation split") from None
        try:
            if self.ledger is not None:
                from skillos.ledger.store import actor

                self.ledger.read_sealed(self.experiment, self.content_hash, why, str(self.seal.parent.resolve()),
                                        actor(), self.override)
        except BaseException:
            os.close(fd)
            self.seal.unlink()
            raise
        with os.fdopen(fd, "w") as fh:
            fh.write(why + "\n")
        return list(self._games)
