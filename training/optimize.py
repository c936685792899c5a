"""Text-space skill optimization (`skillos optimize`, SkillOpt-style): the skill document is the
trainable state of a frozen executor. This module holds the parts that keep that honest; the
rollout → reflect → propose → gate → update loop builds on them.

* `edits_allowed`: the textual learning rate, the most edits one step may make, decaying on a
  schedule (SkillOpt: 4 → 2, cosine).
* The acceptance gate is `skillos.evals.stats.gate` (paired k·SE by default; SkillOpt's strict
  rule for comparison; indecisive when too much of the validation split was unmeasured).
* `calibrate`: an A/A test before any spending. The gate judges two copies of the seed skill;
  a gate that accepts a copy over itself would accept noise, so the run refuses to start.
* `RejectedMemory`: every rejected edit with what it broke and what it fixed, kept across
  epochs (SkillOpt clears it each epoch) and shown to the optimizer as steering.
* `SealedSplit`: the test split, read once at the end for the final report; a second read
  raises, also from a resumed run (the seal is a file in the run's folder).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from skillos.errors import SkillosError
from skillos.evals.stats import GateVerdict, gate
from skillos.repo import SkillRepo

SCHEDULES = ("cosine", "linear", "constant")


def edits_allowed(step: int, total_steps: int, start: int = 4, end: int = 2, schedule: str = "cosine") -> int:
    """The most edits step `step` (0-based) of `total_steps` may make: `start` at the first step,
    `end` at the last, never below 1."""
    if schedule not in SCHEDULES:
        raise SkillosError(f"optimize.schedule: {schedule!r} is not one of {', '.join(SCHEDULES)}")
    if schedule == "constant" or total_steps <= 1:
        return max(1, start)
    t = min(max(step, 0), total_steps - 1) / (total_steps - 1)
    weight = (1 + math.cos(math.pi * t)) / 2 if schedule == "cosine" else 1 - t
    return max(1, round(end + (start - end) * weight))


class CalibrationFailed(SkillosError):
    """The gate accepted the seed skill over an identical copy: it would accept noise."""


def calibrate(first: dict, second: dict, mode: str = "paired", k: float = 2.0,
              max_unmeasured: float = 0.1) -> GateVerdict:
    """A/A: `first` and `second` are the validation outcomes (task id -> True/False/None) of two
    copies of the seed skill. Returns the gate's verdict, which must not be accept."""
    verdict = gate(first, second, mode, k, max_unmeasured)
    if verdict.verdict == "accept":
        raise CalibrationFailed(f"A/A calibration: the {mode} gate accepted a copy of the seed skill over "
                                f"itself ({verdict.reason}); it would accept noise. Raise optimize.gate.k, "
                                "use the paired mode, or validate on more tasks")
    return verdict


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
        if self.path and self.path.is_file():
            self.items = [Rejected(**r) for r in json.loads(self.path.read_text())]

    def add(self, edit: str, verdict: GateVerdict, incumbent: dict, candidate: dict, epoch: int, step: int,
            keys: list | None = None) -> None:
        broke = sorted(t for t in incumbent if incumbent[t] is True and candidate.get(t) is False)
        fixed = sorted(t for t in incumbent if incumbent[t] is False and candidate.get(t) is True)
        self.items.append(Rejected(edit, verdict.verdict, broke, fixed, epoch, step, list(keys or [])))
        if self.path:
            from skillos.repo.store import write_atomic

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


class SealedSplit:
    """The test split: `read()` once, at the end. The seal is a file, so neither a second call nor
    a resumed run can look at the test games twice."""

    def __init__(self, games: list, seal: Path):
        self._games = list(games)
        self.seal = Path(seal)

    @property
    def sealed(self) -> bool:
        return not self.seal.exists()

    def read(self, why: str) -> list:
        import os

        self.seal.parent.mkdir(parents=True, exist_ok=True)
        try:  # create-if-absent is one atomic step: two readers cannot both get the games
            fd = os.open(self.seal, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise SkillosError(f"the sealed test split was already read ({self.seal.read_text().strip()}); "
                               "a second read would make it a validation split") from None
        with os.fdopen(fd, "w") as fh:
            fh.write(why + "\n")
        return list(self._games)


# -- edits -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Edit:
    """One bounded change to the skill set: add, delete or replace one skill."""

    op: str  # add | delete | replace
    name: str
    markdown: str | None = None  # the skill's SKILL.md after the edit (add, replace)

    def summary(self) -> str:
        size = f" ({len(self.markdown.splitlines())} lines)" if self.markdown else ""
        return f"{self.op} {self.name}{size}"

    def key(self) -> str:
        import hashlib

        return f"{self.op} {self.name} {hashlib.sha256((self.markdown or '').encode()).hexdigest()[:12]}"

    def diff(self, before: SkillRepo) -> str:
        import difflib

        old = before.get(self.name)
        a = old.to_markdown().splitlines(keepends=True) if old else []
        b = (self.markdown or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(a, b, f"a/{self.name}/SKILL.md", f"b/{self.name}/SKILL.md"))


def edits_between(before: SkillRepo, after: SkillRepo) -> list[Edit]:
    """The edits that turn `before` into `after`, in name order."""
    edits = []
    for name in sorted({s.name for s in before.skills} | {s.name for s in after.skills}):
        old, new = before.get(name), after.get(name)
        if new is None:
            edits.append(Edit("delete", name))
        elif old is None:
            edits.append(Edit("add", name, new.to_markdown()))
        elif old.to_markdown() != new.to_markdown():
            edits.append(Edit("replace", name, new.to_markdown()))
    return edits


def apply_edits(repo: SkillRepo, edits: list[Edit]) -> SkillRepo:
    """A new in-memory repo: `repo` with `edits` applied."""
    from skillos.repo import parse_skill

    out = repo.copy()
    for e in edits:
        if e.op == "delete":
            out.delete(e.name)
            continue
        skill = parse_skill(e.markdown, e.name)
        if e.op == "add":
            out.insert(skill.name, skill.description, skill.body)
        else:
            out.update(skill.name, skill.description, skill.body)
    return out


# -- proposers ---------------------------------------------------------------------------------
class HeuristicProposer:
    """No model, deterministic: the heuristic curator writes down what the minibatch's
    trajectories showed on a scratch copy, and the differences are the proposed edits. An edit
    the memory already rejected is not proposed again."""

    name = "heuristic"

    def propose(self, incumbent: SkillRepo, trajectories: list, memory: RejectedMemory, budget: int) -> list[Edit]:
        from skillos.evals.backends.heuristic import HeuristicCurator

        scratch, curator = incumbent.copy(), HeuristicCurator()
        for traj in trajectories:
            curator.curate(traj, scratch)
        rejected = {key for r in memory.items for key in r.keys}
        return [e for e in edits_between(incumbent, scratch) if e.key() not in rejected][:budget]


class LLMProposer:
    """A model backend reads the minibatch's trajectories, the current skills, and the rejected
    edits with what each broke and fixed, and edits a copy of the skills with the paper's three
    tools; the differences, cut to the step's budget, are the proposed edits."""

    SYSTEM = ("You optimize the skills (markdown guides) that a household agent reads before each task. "
              "Read the trajectories and their results, then make at most {budget} edits with the tools: "
              "add a skill, rewrite one, or delete one. Small, specific edits that fix observed failures.")

    def __init__(self, config):
        from skillos.evals.backends.chat import make_chat

        self.chat = make_chat(config)
        self.name = f"{config.backend}:{config.model}"

    def propose(self, incumbent: SkillRepo, trajectories: list, memory: RejectedMemory, budget: int) -> list[Edit]:
        from skillos.evals.backends.chat import BackendError
        from skillos.evals.curation import TOOLS, apply_op, curator_input, ops_from_tool_calls

        skills = "\n\n".join(s.to_markdown() for s in incumbent.skills) or "(no skills yet)"
        games = "\n\n".join(curator_input(t) for t in trajectories)
        messages = [{"role": "system", "content": self.SYSTEM.format(budget=budget)},
                    {"role": "user", "content": f"Current skills:\n{skills}\n\n{memory.steering()}\n\n"
                                                f"Trajectories:\n{games}"}]
        try:
            reply = self.chat.chat(messages, tools=TOOLS)
        except BackendError:
            return []  # no proposal this step; the incumbent stays
        scratch = incumbent.copy()
        for op in ops_from_tool_calls(reply.tool_calls):
            apply_op(scratch, op)
        return edits_between(incumbent, scratch)[:budget]


def make_proposer(config):
    if config.backend == "heuristic":
        return HeuristicProposer()
    return LLMProposer(config)


# -- the loop ----------------------------------------------------------------------------------
class _Collect:
    """A curator that edits nothing and keeps the trajectories (what the proposer reads)."""

    def __init__(self):
        self.trajectories = []

    def curate(self, trajectory, repo):
        self.trajectories.append(trajectory)
        return []


def run(cfg, out: Path, ledger=None, echo=print) -> dict:
    """rollout → reflect/propose → gate on validation → update, for optimize.epochs epochs; then
    one read of the sealed test split for the seed-vs-best report. Writes best_skill/,
    history.jsonl, rejected.json and report.json to `out`; records every candidate in the ledger."""
    import random

    from skillos.evals import stats
    from skillos.evals.envs.registry import environment
    from skillos.evals.experiment import arm_settings, check_out, load_games, record_experiment
    from skillos.evals.report import arm_summary
    from skillos.evals.runner import run_arm

    o = cfg.optimize
    seed = preflight(cfg)
    out = Path(out)
    check_out(out)
    train = load_games(cfg, cfg.env.train_split, cfg.env.n_train_games)
    validation = load_games(cfg, o.validation_split, o.n_validation)
    test_games = load_games(cfg, cfg.env.split, cfg.env.n_games)
    hashes = [{g.content_hash for g in games} for games in (train, validation, test_games)]
    if hashes[0] & hashes[1] or hashes[0] & hashes[2] or hashes[1] & hashes[2]:
        raise SkillosError("optimize: the train, validation and test splits share games; refusing to run")
    out.mkdir(parents=True, exist_ok=True)
    test = SealedSplit(test_games, out / "test.sealed")
    domain, pool = environment(cfg), train + validation + test_games
    executor, settings, env = domain.make_executor(cfg.executor), arm_settings(cfg), domain.make_env(pool)

    def play(repo, games, label, curator=None) -> list[dict]:
        return run_arm(label, games, env=env, make_env=lambda: domain.make_env(pool), executor=executor,
                       repo=repo, curator=curator,
                       concurrency=cfg.eval.concurrency if curator is None else 1, **settings)

    def outcomes(rows) -> dict:
        return {r["game_id"]: r["success"] for r in rows}

    gate_args = (o.gate.mode, o.gate.k, o.gate.max_unmeasured)
    first = outcomes(play(seed, validation, "seed"))
    aa = calibrate(first, outcomes(play(seed.copy(), validation, "seed-copy")), *gate_args)
    echo(f"A/A calibration: the {o.gate.mode} gate judged the seed against a copy of itself: {aa.verdict} "
         f"({aa.reason})")

    run_id = None
    if ledger is not None:
        run_id = ledger.start_run(record_experiment(ledger, cfg), "optimize", config=cfg.to_dict(), seed=cfg.env.seed)
    proposer, memory = make_proposer(o.optimizer), RejectedMemory(out / "rejected.json")
    incumbent, incumbent_val = seed, first
    steps_per_epoch = max(1, math.ceil(len(train) / o.minibatch_size))
    total, g, tried, accepted = o.epochs * steps_per_epoch, 0, 0, 0
    for epoch in range(o.epochs):
        order = list(train)
        random.Random(f"skillos-optimize|{cfg.env.seed}|{epoch}").shuffle(order)
        for step in range(steps_per_epoch):
            batch = order[step * o.minibatch_size:(step + 1) * o.minibatch_size]
            budget = edits_allowed(g, total, o.max_edits, o.min_edits, o.schedule)
            g += 1
            collect = _Collect()
            play(incumbent, batch, "minibatch", collect)
            edits = proposer.propose(incumbent, collect.trajectories, memory, budget)[:budget]
            if not edits:
                echo(f"epoch {epoch} step {step}: no edit proposed (budget {budget})")
                continue
            candidate = apply_edits(incumbent, edits)
            candidate_val = outcomes(play(candidate, validation, f"candidate-{g}"))
            verdict = stats.gate(incumbent_val, candidate_val, *gate_args)
            tried += 1
            paired = stats.compare(incumbent_val, candidate_val, names=("candidate", "incumbent"),
                                   alpha=cfg.eval.alpha, power=cfg.eval.power, n_boot=cfg.eval.bootstrap)
            entry = {"epoch": epoch, "step": step, "candidate": tried, "budget": budget,
                     "edits": [e.summary() for e in edits], "diff": "".join(e.diff(incumbent) for e in edits),
                     **verdict.to_dict(), "incumbent_rate": paired.control_rate,
                     "candidate_rate": paired.treatment_rate, "ci_low": paired.ci_low, "ci_high": paired.ci_high}
            with open(out / "history.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")
            if ledger is not None:
                ledger.add_candidate(run_id, **{k: entry[k] for k in (
                    "epoch", "step", "diff", "verdict", "mode", "incumbent_rate", "candidate_rate",
                    "mean_difference", "se", "threshold", "ci_low", "ci_high", "n_tasks", "n_paired",
                    "n_unmeasured")}, edits=json.dumps(entry["edits"]))
            echo(f"epoch {epoch} step {step}: candidate {tried} ({'; '.join(entry['edits'])}): "
                 f"{verdict.verdict}: {verdict.reason}")
            if verdict.verdict == "accept":
                incumbent, incumbent_val, accepted = candidate, candidate_val, accepted + 1
            else:
                memory.add("; ".join(entry["edits"]), verdict, incumbent_val, candidate_val, epoch, step,
                           [e.key() for e in edits])

    (out / "best_skill").mkdir(exist_ok=True)  # even when the best is an empty seed
    incumbent.copy(out / "best_skill")
    final = test.read(f"final report after {tried} candidates")
    seed_rows, best_rows = play(seed, final, "seed"), play(incumbent, final, "best")
    comparison = stats.compare(outcomes(seed_rows), outcomes(best_rows), names=("best", "seed"),
                               alpha=cfg.eval.alpha, power=cfg.eval.power, n_boot=cfg.eval.bootstrap)
    report = _report(cfg, comparison, tried, accepted, aa, arm_summary(seed_rows), arm_summary(best_rows),
                     len(incumbent), out)
    (out / "report.json").write_text(json.dumps(report, indent=1))
    if ledger is not None:
        for arm, summary in (("seed", report["seed"]), ("best", report["best"])):
            ledger.add_eval(run_id, arm, summary, None, None)
        ledger.end_run(run_id, "finished", report["verdict"])
    return report


def preflight(cfg) -> SkillRepo:
    """What can be refused before anything is played: the three splits and the seed skills."""
    splits = {"env.train_split": cfg.env.train_split, "optimize.validation_split": cfg.optimize.validation_split,
              "env.split (sealed test)": cfg.env.split}
    if len(set(splits.values())) < 3:
        raise SkillosError("optimize needs three different splits: "
                           + ", ".join(f"{k} = {v}" for k, v in splits.items()))
    return _seed_repo(cfg)


def _seed_repo(cfg) -> SkillRepo:
    from skillos.repo.skill import SkillError

    folder = cfg.optimize.seed_skills
    if folder is None:
        return SkillRepo(None)
    from skillos.config import relative_to_config

    path = relative_to_config(cfg, folder)
    if not path.is_dir():
        raise SkillosError(f"optimize.seed_skills: {path} is not a folder")
    try:
        return SkillRepo.load(path).copy()  # in memory: the seed folder is never written
    except SkillError as exc:
        raise SkillosError(f"optimize.seed_skills: {exc}") from None


def _report(cfg, comparison, tried: int, accepted: int, aa, seed: dict, best: dict, size: int, out: Path) -> dict:
    """Seed vs best on the sealed test split. The best skill set was chosen among `tried`
    candidates, so the claim is held to a Bonferroni-corrected p (p × candidates tried)."""
    c = comparison.to_dict()
    corrected = None if c["p_value"] is None else min(1.0, c["p_value"] * max(1, tried))
    if accepted == 0:
        verdict = f"no candidate passed the gate ({tried} tried): the best skill set is the seed"
    elif c["difference"] is None:
        verdict = "unmeasured: no test game was measured under both skill sets"
    elif corrected < cfg.eval.alpha and c["difference"] > 0:
        verdict = (f"improved: {c['difference']:+.1%} on the sealed test (p = {c['p_value']:.2g}, "
                   f"{corrected:.2g} corrected for {tried} candidates)")
    else:
        verdict = (f"not shown to improve: {c['difference']:+.1%} on the sealed test (p = {c['p_value']:.2g}, "
                   f"{corrected:.2g} corrected for {tried} candidates; MDE "
                   f"{'unknown' if c['mde'] is None else format(c['mde'], '.1%')})")
    return {"verdict": verdict, "candidates_tried": tried, "accepted": accepted, "best_skills": size,
            "best_skill": str(out / "best_skill"), "gate": cfg.optimize.gate.mode, "calibration": aa.to_dict(),
            "seed": seed, "best": best, "comparison": c, "p_corrected": corrected}
