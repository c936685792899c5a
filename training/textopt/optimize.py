"""Text-space skill optimization (`skillos optimize`, SkillOpt-style): the skill document is the
trainable state of a frozen executor. This module holds the parts that keep that honest; the
rollout → reflect → propose → gate → update loop builds on them.

* `edits_allowed` (candidates.py): the textual learning rate's schedule: a step's budget of changed
  lines of skill text (`textual.StepBudget` admits or refuses each edit by its size), decaying on a schedule.
* Reflect → aggregate (`reflect`): a reflection per trajectory of the minibatch, aggregated into
  one textual gradient the proposer reads; both in the step record (`steps.jsonl`).
* `optimize.target: document` (`document`): one SKILL.md, its sections the edit units,
  `best_skill.md` and its history.
* The acceptance gate is `skillos.evals.stats.accept_candidate` (SkillOpt's strict rule by default;
  paired k·SE where a config chooses it; indecisive when too much of the validation split was unmeasured).
* `calibrate` (in `candidates`, with the loop optimize and sleep share): an A/A test before any
  spending. The gate judges two copies of the seed skill; a gate that accepts a copy over itself
  would accept noise, so the run refuses to start.
* `RejectedMemory` (candidates.py): every rejected edit with what it broke and what it fixed, kept
  across epochs (SkillOpt clears it each epoch) and shown to the optimizer as steering.
* `SealedSplit` (candidates.py): the test split, read once at the end for the final report; a
  second read raises, also from a resumed run (the seal is a file in the run's folder).
* `OptimizeSearch`: optimize's side of the shared candidate loop (`candidates.run_candidates`,
  which writes the history, the ledger's candidate rows and the sealed report).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from skillos.errors import SkillosError
from skillos.evals.run_folder import CONFIG, HISTORY, REPORT, config_text
from skillos.evals.stats import CandidateVerdict
from skillos.repo import SkillRepo
from skillos.training.textopt.candidates import (Books, CalibrationFailed, Candidate, Described, RejectedMemory,  # noqa: F401
                                         SealedSplit, Standing, calibrate, calibrated, edits_allowed,
                                         read_rejected, run_candidates, sealed_report)
from skillos.files import write_atomic
from skillos.registry import NO_MODEL
from skillos import safety
from skillos.safety import json_text
from skillos.config.derived import relative_to_config
from skillos.evals import stats
from skillos.evals.arms import arm_settings, game_sets, load_games
from skillos.evals.backends.chat import BackendError, make_chat
from skillos.evals.curation import TOOLS, apply_op, curator_input, ops_from_tool_calls
from skillos.evals.envs.household.heuristic import HeuristicCurator
from skillos.evals.envs.registry import environment
from skillos.evals.records import check_schema
from skillos.evals.report import arm_summary
from skillos.evals.run_folder import check_out, same_config
from skillos.evals.runner import run_arm
from skillos.ledger.experiments import record_experiment
from skillos.repo import parse_skill
from skillos.repo.skill import SkillError
from skillos.training.textopt import document as doc, slow
from skillos.training.textopt.document import DocumentProposer, seed_document
from skillos.training.textopt.reflect import ModelReflector, order_by_gradient, reflect_all, step_record
from skillos.training.textopt.slow import DEFAULT_META, read_meta
from skillos.training.textopt.textual import StepBudget



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
        return f"{self.op} {self.name} {hashlib.sha256((self.markdown or '').encode()).hexdigest()[:12]}"

    def texts(self, before: SkillRepo) -> tuple[str, str]:
        """The skill's text before and after the edit ("" where it does not exist)."""
        old = before.get(self.name)
        return (old.to_markdown() if old else ""), (self.markdown or "")

    def diff(self, before: SkillRepo) -> str:
        import difflib

        a, b = (t.splitlines(keepends=True) for t in self.texts(before))
        return "".join(difflib.unified_diff(a, b, f"a/{self.name}/SKILL.md", f"b/{self.name}/SKILL.md"))

    def apply_in(self, out: SkillRepo) -> str | None:
        """Apply the edit to `out`; the reason it could not be applied, else None."""
        if self.op == "delete":
            result = out.delete(self.name)
        else:
            skill = parse_skill(self.markdown, self.name)
            result = (out.insert if self.op == "add" else out.update)(skill.name, skill.description, skill.body)
        return None if result.ok else result.reason


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
    """A new in-memory repo: `repo` with `edits` applied (skill edits, or a document's section
    edits)."""
    out = repo.copy()
    for e in edits:
        e.apply_in(out)
    return out


# -- proposers ---------------------------------------------------------------------------------
class HeuristicProposer:
    """No model, deterministic: the reflections and their gradient come from rules
    (`reflect.reflect_rules`); the heuristic curator writes down what the minibatch's trajectories
    showed on a scratch copy, and the differences, ordered by the gradient (what failures cited
    first, what only wins cited last), are the proposed edits."""

    name = "heuristic"
    meta_skill = None  # set by the run; rules read no prose (the step record names the version all the same)
    reply = None  # no model reply to parse or count

    def reflect(self, incumbent: SkillRepo, trajectories: list) -> tuple[list, object]:
        return reflect_all(None, trajectories, incumbent)

    def propose(self, incumbent: SkillRepo, trajectories: list, memory: RejectedMemory, budget: int,
                gradient=None) -> list[Edit]:
        scratch, curator = incumbent.copy(), HeuristicCurator()
        for traj in trajectories:
            curator.curate(traj, scratch)
        return order_by_gradient(edits_between(incumbent, scratch), gradient)


class LLMProposer:
    """A model backend reflects on each trajectory and aggregates the reflections into a textual
    gradient (`reflect.ModelReflector`), then reads the gradient, the current skills, the
    trajectories and the rejected edits with what each broke and fixed, and edits a copy of the
    skills with the paper's three tools; the differences are the proposed edits (the step's
    budget of changed lines then admits or refuses each)."""

    SYSTEM = ("You optimize the skills (markdown guides) that a household agent reads before each task. "
              "Read the textual gradient, the trajectories and their results, then edit with the tools: add a "
              "skill, rewrite one, or delete one. This step may change at most {budget} lines of skill text in "
              "all (a rewrite counts every line it changes; an edit over what is left is refused). Small, "
              "specific edits that fix observed failures.")

    def __init__(self, config):
        self.chat = make_chat(config)
        self.name = f"{config.backend}:{config.model}"
        self.meta_skill = None  # the meta skill's text (how to edit skills), read with the instructions
        self.reply = None  # the last step's reply: {parsed_calls, applied_ops, refused_ops, failure} (steps.jsonl)

    def reflect(self, incumbent: SkillRepo, trajectories: list) -> tuple[list, object]:
        return reflect_all(ModelReflector(self.chat, self.name), trajectories, incumbent)

    def propose(self, incumbent: SkillRepo, trajectories: list, memory: RejectedMemory, budget: int,
                gradient=None) -> list[Edit]:
        skills = "\n\n".join(s.to_markdown() for s in incumbent.skills) or "(no skills yet)"
        games = "\n\n".join(curator_input(t) for t in trajectories)
        told = f"Textual gradient:\n{gradient.text}\n\n" if gradient is not None else ""
        system = self.SYSTEM.format(budget=budget)
        if self.meta_skill:
            system += f"\n\nThe meta skill (how to edit skills):\n{self.meta_skill}"
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": f"Current skills:\n{skills}\n\n{memory.steering()}\n\n"
                                                f"{told}Trajectories:\n{games}"}]
        try:
            reply = self.chat.chat(messages, tools=TOOLS)
        except BackendError as exc:  # no proposal this step (the incumbent stays), counted as failed
            self.reply = {"parsed_calls": 0, "applied_ops": 0, "refused_ops": 0,
                          "failure": f"model call failed: {str(exc)[:200]}"}
            return []
        scratch = incumbent.copy()
        applied = [apply_op(scratch, op) for op in ops_from_tool_calls(reply.tool_calls)]
        refused = [a.line for a in applied if not a.ok]
        failure = (f"the reply held no parseable tool call: {reply.text[:200]!r}" if not reply.tool_calls else
                   None if len(refused) < len(applied) else
                   f"every operation its calls named was refused: {refused[0][:200] if refused else 'none named'}")
        self.reply = {"parsed_calls": len(reply.tool_calls), "applied_ops": len(applied) - len(refused),
                      "refused_ops": len(refused), "failure": failure}
        return edits_between(incumbent, scratch)


def make_proposer(config, target: str):
    """The proposer of optimize.optimizer; for target `document`, pointed at one document's sections."""
    inner = HeuristicProposer() if config.backend == NO_MODEL else LLMProposer(config)
    return DocumentProposer(inner) if target == "document" else inner


# -- the loop ----------------------------------------------------------------------------------
class _Collect:
    """A curator that edits nothing and keeps the trajectories (what the proposer reads)."""

    def __init__(self):
        self.trajectories = []

    def curate(self, trajectory, repo):
        self.trajectories.append(trajectory)
        return []


def run(cfg, out: Path, ledger=None, echo=print, resume: bool = False, unseal: str | None = None,
        signal: str = "real") -> dict:
    """rollout → reflect/propose → gate on validation → update, for optimize.epochs epochs; then
    one read of the sealed test split for the seed-vs-best report. Writes best_skill/,
    history.jsonl, rejected.json and report.json to `out`; records every candidate in the ledger.

    After every step the run's state (position, incumbent in incumbent/, its validation outcomes,
    counts) is saved to state.json, so `resume` continues a killed run where it stopped, with its
    rejected memory; a step cut off mid-way is played again. The folder is locked while the run
    writes it (a second optimize on it, or a resume while the first lives, is refused)."""
    with safety.RunLock(Path(out)):
        return _run(cfg, Path(out), ledger, echo, resume, unseal, signal)


def destroyed(trajectories: list, incumbent: dict, candidate: dict, seed: str,
              signal: str = "shuffled") -> tuple[list, dict, dict]:
    """The learning signal of one step destroyed (a learning canary's negative controls).
    shuffled: the minibatch's outcomes permuted among its trajectories before the proposer reads
    them, and each validation task's incumbent and candidate outcomes swapped with probability
    1/2 before the gate compares them (the paired permutation null: no candidate is better in
    expectation). flipped: every outcome inverted (a win read as a loss; unmeasured stays so) and
    every task's pair swapped, so the gate accepts a candidate that did worse."""
    import dataclasses

    rng = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    won = [t.won for t in trajectories]
    if signal == "flipped":
        won = [w if w is None else not w for w in won]
    else:
        rng.shuffle(won)
    trajectories = [dataclasses.replace(t, won=w) for t, w in zip(trajectories, won)]
    inc, cand = dict(incumbent), dict(candidate)
    for task in sorted(set(inc) & set(cand)):
        if signal == "flipped" or rng.random() < 0.5:
            inc[task], cand[task] = cand[task], inc[task]
    return trajectories, inc, cand


def gate_args(cfg) -> tuple:
    """What every candidate's acceptance receives (stats.accept_candidate): the gate's mode, k and
    the unmeasured share it tolerates; the trace reads the same tuple."""
    o = cfg.optimize
    return o.gate.mode, o.gate.k, o.gate.max_unmeasured


def _run(cfg, out: Path, ledger, echo, resume: bool, unseal: str | None, signal: str = "real") -> dict:
    o, seed, run = cfg.optimize, preflight(cfg), _Games.load(cfg, out, ledger, resume, unseal)
    state, acceptance = run.state, gate_args(cfg)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / CONFIG, config_text(cfg))
    player = _Player(cfg, run.train + run.validation + run.test_games, echo)
    if state is None:
        echo(f"A/A calibration: the seed skills twice on the {len(run.validation)} validation tasks, before any candidate")
        first, aa = calibrated(lambda: player.outcomes(seed, run.validation, "seed"),
                               lambda: player.outcomes(seed.copy(), run.validation, "seed-copy"), acceptance)
        run_id = None
        if ledger is not None:
            run_id = ledger.start_run(record_experiment(ledger, cfg), "optimize", config=cfg.to_dict(),
                                      seed=cfg.env.seed)
        state = {"schema_version": STATE_VERSION, "next": 0, "tried": 0, "accepted": 0, "run_id": run_id,
                 "seed_validation": first, "incumbent_validation": first, "calibration": aa.to_dict()}
        incumbent = seed
        if o.target == "document":
            doc.write_version(out, seed, 0)
    else:
        aa = CandidateVerdict(**state["calibration"])
        incumbent = SkillRepo.load(out / "incumbent").copy()
        if o.target == "document":  # an acceptance logged after the last saved state was dropped
            doc.write_version(out, incumbent, _last_accepted(out))
        echo(f"resuming {out} at step {state['next']} of {run.total}: {state['tried']} candidates tried, "
             f"{state['accepted']} accepted")
    echo(f"A/A calibration: the {o.gate.mode} gate judged the seed against a copy of itself: {aa.verdict} "
         f"({aa.reason})")
    echo(acceptance_plan(cfg, aa))  # before any candidate is played
    search = OptimizeSearch(cfg, out, run, player, state, signal, echo)
    standing = Standing(incumbent, state["incumbent_validation"], state["tried"], state["accepted"])
    books = Books(out / HISTORY, ledger, state["run_id"], echo, stats_args(cfg))
    run_candidates(range(state["next"], run.total), standing, search.memory, search, books)
    return _final_report(cfg, out, ledger, run, player, seed, standing, state, aa, search)


def stats_args(cfg) -> dict:
    """What every paired comparison of a candidate loop passes to stats.compare: the eval section's."""
    return {"alpha": cfg.eval.alpha, "power": cfg.eval.power, "n_boot": cfg.eval.bootstrap}


@dataclass
class _Games:
    """The run's three splits, checked apart before anything is played; the sealed test split;
    the saved state of a resumed run (None: a fresh one) and the number of positions."""

    train: list
    validation: list
    test_games: list
    test: SealedSplit
    state: dict | None
    total: int

    @classmethod
    def load(cls, cfg, out: Path, ledger, resume: bool, unseal: str | None) -> "_Games":
        o = cfg.optimize
        _, per_epoch, total = positions(cfg)
        # every refusal that needs no game is made before any game is generated or played
        state = _resume_state(cfg, out, ledger, total, per_epoch) if check_out(out, resume) else None
        train = load_games(cfg, *game_sets(cfg)["train"])
        validation = load_games(cfg, o.validation_split, o.n_validation)
        test_games = load_games(cfg, *game_sets(cfg)["held_out"])
        hashes = [{g.content_hash for g in games} for games in (train, validation, test_games)]
        if hashes[0] & hashes[1] or hashes[0] & hashes[2] or hashes[1] & hashes[2]:
            raise SkillosError("optimize: the train, validation and test splits share games; refusing to run")
        if len(train) != cfg.env.n_train_games:
            raise SkillosError(f"optimize: env.n_train_games is {cfg.env.n_train_games} but the split has {len(train)}")
        test = SealedSplit(test_games, out / "test.sealed", ledger, cfg.experiment.name, unseal)
        if not (resume and finishing(out)):
            test.check_unread()  # a split the ledger has sealed: refused now, not after the whole run
        if state is not None:
            _check_state_games(out, state, validation)
        return cls(train, validation, test_games, test, state, total)


class _Player:
    """Plays a skill repo on games with the config's executor, one env per game in flight."""

    def __init__(self, cfg, pool: list, echo):
        self.cfg, self.pool, self.echo = cfg, pool, echo
        self.domain = environment(cfg)
        self.executor, self.env = self.domain.make_executor(cfg.executor), self.domain.make_env(pool)

    def play(self, repo, games, label, curator=None, on_game=None) -> list[dict]:
        tick, played = safety.Ticker(self.echo, f"{label}: games played", len(games)), []
        tick(0)

        def one_more(row):
            played.append(row)
            tick(len(played))
            if on_game is not None:
                on_game(row)

        return run_arm(label, games, env=self.env, make_env=lambda: self.domain.make_env(self.pool),
                       executor=self.executor, repo=repo, curator=curator, on_game=one_more,
                       **arm_settings(self.cfg, curate_each_game=curator is not None))

    def outcomes(self, repo, games, label) -> dict:
        return outcomes(self.play(repo, games, label))


def outcomes(rows) -> dict:
    return {r["game_id"]: r["success"] for r in rows}


class OptimizeSearch:
    """Optimize's side of the candidate loop (candidates.Search): a step plays a minibatch, the
    proposer reflects and proposes edits within the step's budget; an epoch's last position is
    the slow update; a step's record goes to steps.jsonl and the state is saved after it."""

    def __init__(self, cfg, out: Path, run: _Games, player: _Player, state: dict, signal: str, echo):
        o = cfg.optimize
        self.cfg, self.out, self.run, self.player, self.state, self.signal, self.echo = \
            cfg, out, run, player, state, signal, echo
        self.steps_per_epoch, self.per_epoch, _ = positions(cfg)
        self.proposer, self.memory = make_proposer(o.optimizer, o.target), RejectedMemory(out / "rejected.json")
        self.inner = getattr(self.proposer, "inner", self.proposer)
        self.meta = dict(zip(("text", "version"), slow.latest_meta(out, _meta_source(cfg), state["next"])))
        self.step_info: dict = {}  # this step's record, written to steps.jsonl after the step

    def propose(self, g: int, now: Standing) -> Candidate | None:
        o, echo = self.cfg.optimize, self.echo
        epoch, step = divmod(g, self.per_epoch)
        if step == self.steps_per_epoch:
            return self.slow_update(g, epoch, step, now)
        self.inner.meta_skill = self.meta["text"]
        order = list(self.run.train)
        random.Random(f"skillos-optimize|{self.cfg.env.seed}|{epoch}").shuffle(order)
        batch = order[step * o.minibatch_size:(step + 1) * o.minibatch_size]
        budget = StepBudget(edits_allowed(epoch * self.steps_per_epoch + step, o.epochs * self.steps_per_epoch,
                                          o.max_lines, o.last_lines, o.schedule))
        collect = _Collect()
        self.player.play(now.skill, batch, "minibatch", collect)
        seen = collect.trajectories
        if self.signal != "real":
            seen, _, _ = destroyed(seen, {}, {}, f"{self.cfg.env.seed}|{g}|minibatch", self.signal)
        reflections, gradient = self.proposer.reflect(now.skill, seen)
        proposed = self.proposer.propose(now.skill, seen, self.memory, budget.allowed, gradient)
        rejected = {key for r in self.memory.items for key in r.keys}  # an edit once rejected is not tried again
        fresh = [e for e in proposed if e.key() not in rejected]
        edits = budget.admit(fresh, now.skill)
        self.step_info = {"epoch": epoch, "step": step, "g": g, "minibatch": len(batch), "proposed": len(proposed),
                          "already_rejected": len(proposed) - len(fresh), "admitted": len(edits),
                          "proposer_reply": self.inner.reply, "budget": budget.to_dict(),
                          **step_record(seen, reflections, gradient), "meta_skill": self.meta["version"],
                          "candidate": None, "verdict": None}
        if self.inner.reply is not None and self.inner.reply["failure"]:
            echo(f"epoch {epoch} step {step}: the proposer's reply counts as failed: {self.inner.reply['failure']}")
        echo(f"epoch {epoch} step {step}: {len(reflections)} reflections -> gradient; {len(proposed)} edits proposed, "
             f"{len(edits)} admitted ({budget.used} of {budget.allowed} changed lines), {len(budget.refusals)} "
             f"refused (steps.jsonl says why), {len(proposed) - len(fresh)} rejected before")
        if not edits:
            return None
        return Candidate(apply_edits(now.skill, edits), [e.summary() for e in edits], [e.key() for e in edits],
                         epoch, step, detail={"g": g, "budget": budget, "edits": edits})

    def slow_update(self, g: int, epoch: int, step: int, now: Standing) -> Candidate | None:
        """The epoch's end: guidance into the protected block (a gated candidate), lessons into
        the meta skill (the proposer's, ungated: it only shapes proposals, which are gated)."""
        o, out, meta = self.cfg.optimize, self.out, self.meta
        so_far = [s for s in _steps(out) if (s.get("epoch") or 0) <= epoch and not s.get("slow_update")]
        steps = [s for s in so_far if s.get("epoch") == epoch]
        tried = [h for h in _history(out) if (h.get("epoch") or 0) <= epoch and h.get("budget") is not None]
        guidance, source = slow.guidance_model(getattr(self.inner, "chat", None), epoch, steps,
                                               slow.current_guidance(now.skill, o.target))
        meta["text"] = slow.with_lessons(meta["text"], epoch, so_far, tried)  # rewritten over every epoch
        meta["version"] = slow.write_versions(out, g, guidance, source, meta["text"])
        edit = slow.slow_edit(now.skill, o.target, guidance, self.cfg.env.name)
        self.step_info = {"epoch": epoch, "step": step, "g": g, "slow_update": True, "guidance": guidance,
                          "guidance_source": source, "meta_skill": meta["version"], "budget": None,
                          "budget_reason": "the slow update is outside the learning rate", "candidate": None,
                          "verdict": None}
        self.echo(f"epoch {epoch} slow update: {len(guidance.splitlines())} lines of guidance ({source}); meta skill "
                  f"{meta['version']}")
        if edit is None:
            return None
        return Candidate(apply_edits(now.skill, [edit]), [edit.summary()], [edit.key()], epoch, step,
                         detail={"g": g, "budget": None, "edits": [edit]})

    def evaluate(self, candidate: Candidate) -> dict:
        return self.player.outcomes(candidate.skill, self.run.validation, f"candidate-{candidate.detail['g'] + 1}")

    def judge(self, g: int, incumbent_val: dict, candidate_val: dict) -> CandidateVerdict:
        if self.signal != "real":  # a canary's control: the gate sees the outcomes destroyed
            _, incumbent_val, candidate_val = destroyed([], incumbent_val, candidate_val,
                                                        f"{self.cfg.env.seed}|{g}|gate", self.signal)
        return stats.accept_candidate(incumbent_val, candidate_val, *gate_args(self.cfg))

    def describe(self, candidate: Candidate, verdict: CandidateVerdict, now: Standing, candidate_val: dict,
                 paired) -> Described:
        row = {"epoch": candidate.epoch, "step": candidate.step, "candidate": now.tried,
               "budget": candidate.detail["budget"] and candidate.detail["budget"].to_dict(),
               "edits": candidate.edits, "reflections": self.step_info.get("reflections"),
               "gradient": self.step_info.get("gradient"), "slow_update": self.step_info.get("guidance"),
               "diff": "".join(e.diff(now.skill) for e in candidate.detail["edits"]),
               **verdict.to_dict(), "incumbent_rate": paired.control_rate,
               "candidate_rate": paired.treatment_rate, "ci_low": paired.ci_low, "ci_high": paired.ci_high}
        self.step_info.update(candidate=now.tried, verdict=verdict.verdict)
        line = (f"epoch {candidate.epoch} step {candidate.step}: candidate {now.tried} ({'; '.join(row['edits'])}): "
                f"{verdict.verdict}: {verdict.reason}")
        return Described(row, row["diff"], json.dumps(row["edits"]), line)

    def after_step(self, g: int, now: Standing) -> None:  # every step, so a killed run resumes after it
        if self.cfg.optimize.target == "document" and self.step_info.get("verdict") == "accept":
            doc.write_version(self.out, now.skill, now.tried)  # after its history and ledger rows, as before
        with open(self.out / STEPS, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(self.step_info) + "\n")
        _save_state(self.out, now.skill, {**self.state, "next": g + 1, "tried": now.tried, "accepted": now.accepted,
                                          "incumbent_validation": now.validation})


def _final_report(cfg, out: Path, ledger, run: _Games, player: _Player, seed, standing: Standing, state: dict,
                  aa, search: OptimizeSearch) -> dict:
    """The best skill saved, the sealed test split read once, seed vs best on it, the report."""

    incumbent, tried, accepted, run_id = standing.skill, standing.tried, standing.accepted, state["run_id"]
    (out / "best_skill").mkdir(exist_ok=True)  # even when the best is an empty seed
    incumbent.copy(out / "best_skill")
    final, kept = _test_read(out, run.test, seed, incumbent, tried)
    seed_rows, best_rows = (_test_play(out, player, repo, final, arm, kept)
                            for arm, repo in (("seed", seed), ("best", incumbent)))
    comparison = stats.compare(outcomes(seed_rows), outcomes(best_rows), names=("best", "seed"), **stats_args(cfg))
    report = sealed_report(cfg, comparison, tried, accepted, aa, arm_summary(seed_rows), arm_summary(best_rows),
                           len(incumbent), out, cfg.optimize.gate.mode)
    # Which games seed and best are scored on: the sealed test split, named with the hash the
    # ledger seals it by (validation numbers never appear as the result).
    report["scored_on"] = {"split": cfg.env.split, "role": "sealed test split (read once)",
                           "n_games": len(final), "content_hash": run.test.content_hash,
                           "played_after_a_fault": {arm: len(final) - len(kept.get(arm, {}))
                                                    for arm in ("seed", "best")} if kept else None}
    report["test_outcomes"] = {"seed": outcomes(seed_rows), "best": outcomes(best_rows)}
    report["proposer_replies"] = proposer_replies(_steps(out))
    if cfg.optimize.target == "document":
        doc.write_version(out, incumbent, _last_accepted(out))
        seed_val = [v for v in state["seed_validation"].values() if v is not None]
        history = doc.write_history(out, _history(out), sum(seed_val) / len(seed_val) if seed_val else None)
        report.update(target="document", best_skill=str(out / doc.BEST), best_skill_history=str(history))
    write_atomic(out / REPORT, json_text(report))
    if ledger is not None:
        for arm, summary in (("seed", report["seed"]), ("best", report["best"])):
            ledger.add_eval(run_id, arm, summary, None, None)
        ledger.end_experiment_run(run_id, "finished", report["verdict"], experiment_status="measured")
    return report


STEPS = "steps.jsonl"  # one record per step: budget, refusals, reflections, gradient, candidate
# The sealed test read: which seed and best it was read for (written before the read), and each
# test game's row as it is played, so a read an infrastructure fault cut short is completed.
TEST_READ, TEST_GAMES = "test-read.json", "test-games.jsonl"


def _test_read(out: Path, test: SealedSplit, seed, best, tried: int) -> tuple[list, dict]:
    """The sealed test games, and the rows already played of each arm ({} on a first read). The
    seed and best are chosen before the read; a run whose read was cut off (test.sealed and
    test-read.json, no report) takes the same games again, without a second read of the seal,
    only for the same seed and best: replaying the games no arm finished peeks at nothing, and a
    game already played keeps its first outcome (no re-roll of a sampling executor)."""
    chosen = {"seed": seed.digest(), "best": best.digest(), "tried": tried}
    if not (out / "test.sealed").exists():
        write_atomic(out / TEST_READ, json.dumps(chosen))
        (out / TEST_GAMES).unlink(missing_ok=True)
        return test.read(f"final report after {tried} candidates"), {}
    recorded = safety.read_json_file(out / TEST_READ, "optimize test read")
    if recorded != chosen:
        raise SkillosError(f"{out / TEST_READ}: the sealed test split was read for another seed or best "
                           f"({recorded!r:.120}); completing it with these would choose after a look")
    kept: dict = {}
    if (out / TEST_GAMES).exists():
        for _, _, entry in safety.jsonl_records(out / TEST_GAMES, "optimize test games", safety.Skips()):
            if isinstance(entry.get("row"), dict) and entry.get("arm") in ("seed", "best"):
                kept.setdefault(entry["arm"], {})[entry["row"].get("game_id")] = entry["row"]
    return test.reread(f"completed after an interrupted read ({sum(map(len, kept.values()))} rows kept)"), kept


def _test_play(out: Path, player, repo, games: list, arm: str, kept: dict) -> list[dict]:
    """The arm's rows on the test games in their order: those kept, the rest played now, each
    appended to test-games.jsonl as it finishes."""
    have = kept.get(arm, {})
    todo = [g for g in games if g.id not in have]
    rows = {}
    if todo:
        with open(out / TEST_GAMES, "a") as fh:
            def keep(row):
                fh.write(json.dumps({"arm": arm, "row": row}, default=str) + "\n")
                fh.flush()
            rows = {r["game_id"]: r for r in player.play(repo, todo, arm, on_game=keep)}
    return [have.get(g.id) or rows[g.id] for g in games]


def finishing(out: Path) -> bool:
    """Whether `out` holds a run whose sealed test read was cut off: the read, no report."""
    return (out / "test.sealed").exists() and (out / TEST_READ).exists() and not (out / REPORT).exists()


def proposer_replies(steps: list[dict]) -> dict | None:
    """How a model proposer's replies went over the run's steps: {steps, parsed, failed, failures};
    None for a proposer with no model (the rules have no reply to parse)."""
    replies = [s["proposer_reply"] for s in steps if s.get("proposer_reply") is not None]
    if not replies:
        return None
    failed = [r["failure"] for r in replies if r["failure"]]
    return {"steps": len(replies), "parsed": len(replies) - len(failed), "failed": len(failed),
            "failures": failed[:5]}


def positions(cfg) -> tuple[int, int, int]:
    """(ordinary steps per epoch, positions per epoch, positions in the run): with
    optimize.slow_update each epoch ends with one more position, its slow update."""
    o = cfg.optimize
    steps_per_epoch = max(1, math.ceil(cfg.env.n_train_games / o.minibatch_size))
    per_epoch = steps_per_epoch + (1 if o.slow_update else 0)
    return steps_per_epoch, per_epoch, o.epochs * per_epoch


def _meta_source(cfg) -> Path:
    return relative_to_config(cfg, cfg.optimize.meta_skill) if cfg.optimize.meta_skill else DEFAULT_META


def _steps(out: Path) -> list[dict]:
    """The run's step records (steps.jsonl), as saved."""
    path = out / STEPS
    return [e for _, _, e in safety.jsonl_records(path, "optimize step records", safety.Skips())] if path.exists() else []


def _history(out: Path) -> list[dict]:
    """The run's candidate history (history.jsonl), as saved."""
    path = out / HISTORY
    return [e for _, _, e in safety.jsonl_records(path, "optimize history", safety.Skips())] if path.exists() else []


def _last_accepted(out: Path) -> int:
    """The candidate number of the last accepted candidate in the history (0: none, the seed)."""
    return max((h["candidate"] for h in _history(out) if h.get("verdict") == "accept"), default=0)


def acceptance_plan(cfg, aa: CandidateVerdict | None = None) -> str:
    """The smallest gain the gate can accept on n_validation tasks, from the A/A run's paired
    differences (noise: the share of tasks that flipped between two copies of the seed) or,
    before any game, from experiment.expected_discordance. A candidate below it is rejected
    by construction, however real its gain."""
    o = cfg.optimize
    n = o.n_validation
    if o.gate.mode == "strict":
        return f"smallest acceptable gain: 1 of {n} validation tasks (strict gate: any positive difference)"
    if aa is not None and aa.se is not None and aa.mean_difference is not None:
        # se² = Σ(d - mean)² / (n - 1) / n, so the share of flipped tasks Σd²/n is:
        noise = aa.se ** 2 * (aa.n_paired - 1) + aa.mean_difference ** 2
        gain = stats.smallest_acceptable_gain(n, o.gate.k, noise=noise)
        source = f"A/A paired variance: {noise:.1%} of tasks flipped between copies of the seed"
    elif cfg.experiment.expected_discordance is not None:
        gain = stats.smallest_acceptable_gain(n, o.gate.k, discordance=cfg.experiment.expected_discordance)
        source = f"experiment.expected_discordance {cfg.experiment.expected_discordance:g}"
    else:
        gain = stats.smallest_acceptable_gain(n, o.gate.k, noise=0.0)
        source = "no noise at all (the best case)"
    tasks = math.floor(gain * n) + 1
    return (f"smallest acceptable gain: {gain:+.1%} of n_validation = {n} tasks, i.e. {tasks} more tasks won "
            f"than lost (k = {o.gate.k:g}; {source}); a smaller real gain is rejected by construction")


def _save_state(out: Path, incumbent: SkillRepo, state: dict) -> None:
    import shutil

    staged = out / ".incumbent.new"  # the incumbent folder and the state change together
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir()
    incumbent.copy(staged)
    shutil.rmtree(out / "incumbent", ignore_errors=True)
    staged.rename(out / "incumbent")
    write_atomic(out / "state.json", json.dumps({**state, "schema_version": STATE_VERSION}, indent=1))


STATE_VERSION = 1  # of state.json


def _resume_state(cfg, out: Path, ledger=None, total: int | None = None, steps_per_epoch: int = 1,
                  write: bool = True) -> dict | None:
    """The saved state of the killed run in `out` (None: it died before its first step, and
    starts over); refuses a folder of another config or a finished run, and, in one line, state
    that does not match itself, its history, its rejected memory, its incumbent or the ledger
    (counts, indexes, types). A candidate logged after the last saved state is dropped from the
    history, the memory and the ledger (invalidated there, with the reason): its step is played
    again."""
    if not same_config(out, cfg):
        raise SkillosError(f"{out}: its config.yaml differs from this config (or is missing); resume "
                           "with the same config, or choose another --out")
    if (out / REPORT).exists() or ((out / "test.sealed").exists() and not finishing(out)):
        raise SkillosError(f"{out}: this optimize run already read its sealed test split; nothing to resume")
    if not (out / "state.json").exists():
        for name in (HISTORY, "rejected.json", STEPS):
            if write:
                (out / name).unlink(missing_ok=True)
        return None

    where = out / "state.json"
    state = safety.read_json_file(where, "optimize state")

    def bad(what: str) -> SkillosError:
        return SkillosError(f"{where}: {what}; the run cannot be continued as it is: rerun without --resume "
                            "into another --out")

    check_schema(state, str(where), STATE_VERSION)
    ints = {k: state.get(k) for k in ("next", "tried", "accepted")}
    for k, v in ints.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise bad(f"{k} is {v!r}, not a count")
    if total is not None and ints["next"] > total:
        raise bad(f"next step {ints['next']} is past the run's {total} steps")
    if ints["tried"] > ints["next"] or ints["accepted"] > ints["tried"]:
        raise bad(f"{ints['tried']} candidates tried and {ints['accepted']} accepted in {ints['next']} steps "
                  "do not add up")
    run_id = state.get("run_id")
    if run_id is not None and (isinstance(run_id, bool) or not isinstance(run_id, int)):
        raise bad(f"run_id is {run_id!r}")
    for k in ("seed_validation", "incumbent_validation"):
        v = state.get(k)
        if not isinstance(v, dict) or not all(isinstance(t, str) and x in (True, False, None) for t, x in v.items()):
            raise bad(f"{k} is not a map of task ids to outcomes")
    if set(state["seed_validation"]) != set(state["incumbent_validation"]):
        raise bad("the seed's and the incumbent's validation tasks differ")
    try:
        CandidateVerdict(**state.get("calibration"))
    except (TypeError, ValueError):
        raise bad("calibration is not a gate verdict") from None
    try:
        SkillRepo.load(out / "incumbent")
    except Exception as exc:  # noqa: BLE001 - any unreadable incumbent is one line
        raise bad(f"its incumbent skills cannot be read ({str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__})") from None
    if not (out / "incumbent").is_dir():
        raise bad("its incumbent/ folder is missing")

    history = out / HISTORY  # a candidate logged after the last saved state is played again
    kept = []
    if history.exists():
        skips = safety.Skips()
        for number, line, entry in safety.jsonl_records(history, "optimize history", skips):
            c = entry.get("candidate")
            if isinstance(c, bool) or not isinstance(c, int) or not isinstance(entry.get("verdict"), str):
                raise SkillosError(f"{history} line {number}: damaged history entry (candidate {c!r}); rerun "
                                   "without --resume into another --out")
            if c <= ints["tried"]:
                kept.append((c, entry, line))
        damaged = [p for p in skips.places if not p.endswith(("partial-last-line", "repaired-utf8"))]
        if damaged:
            raise SkillosError(f"{history}: damaged ({damaged[0]}); rerun without --resume into another --out")
    if [c for c, _, _ in kept] != list(range(1, ints["tried"] + 1)):
        raise bad(f"it says {ints['tried']} candidates were tried; history.jsonl holds candidates "
                  f"{[c for c, _, _ in kept][:10]}")
    if sum(e["verdict"] == "accept" for _, e, _ in kept) != ints["accepted"]:
        raise bad(f"it says {ints['accepted']} accepted; history.jsonl accepts "
                  f"{sum(e['verdict'] == 'accept' for _, e, _ in kept)}")
    memory = RejectedMemory(out / "rejected.json" if write else None)
    if not write and (out / "rejected.json").exists():
        memory.items = read_rejected(out / "rejected.json")  # damaged: a one-line error
    memory.keep(lambda epoch, step: epoch * steps_per_epoch + step < ints["next"])
    rejected = sum(e["verdict"] != "accept" for _, e, _ in kept)
    if len(memory.items) != rejected:
        raise bad(f"rejected.json holds {len(memory.items)} rejected edits; history.jsonl rejects {rejected}")
    if ledger is not None:
        _match_ledger(ledger, cfg, run_id, ints["tried"], bad, write)
    if write:
        write_atomic(history, "".join(line + "\n" for _, _, line in kept))
        _keep_steps(out / STEPS, ints["next"])
    return state


def _keep_steps(path: Path, next_step: int) -> None:
    """steps.jsonl without the records of steps a resumed run plays again."""
    if not path.exists():
        return
    kept = [line for _, line, entry in safety.jsonl_records(path, "optimize step records", safety.Skips())
            if isinstance(entry.get("g"), int) and entry["g"] < next_step]
    write_atomic(path, "".join(line + "\n" for line in kept))


def _match_ledger(ledger, cfg, run_id, tried: int, bad, write: bool = True) -> None:
    """The ledger's run and candidates against the saved state: the run exists, belongs to this
    experiment and did not finish; it holds at least the saved candidates, and the ones recorded
    after the last saved state are invalidated (their step is played again)."""
    if run_id is None:
        raise bad("it has no ledger run, but a ledger is in use (the run was made without one)")
    row = ledger.db.execute("SELECT r.id, r.status, e.name FROM runs r LEFT JOIN experiments e "
                            "ON e.id = r.experiment_id WHERE r.id = ?", (run_id,)).fetchone()
    if row is None:
        raise bad(f"its ledger run #{run_id} is not in {ledger.path}")
    if row["name"] != cfg.experiment.name:
        raise bad(f"its ledger run #{run_id} belongs to experiment {row['name']!r}, not {cfg.experiment.name!r}")
    if row["status"] == "finished":
        raise bad(f"its ledger run #{run_id} is finished")
    candidates = [dict(c) for c in ledger.db.execute("SELECT id FROM candidates WHERE run_id = ? ORDER BY id",
                                                     (run_id,))]
    valid = [c for c in candidates if ledger.corrected("candidates", c)["valid"]]
    if len(valid) < tried:
        raise bad(f"it says {tried} candidates were tried; the ledger's run #{run_id} records {len(valid)}")
    for c in valid[tried:] if write else ():
        ledger.correct("candidates", c["id"], "invalidate",
                       "recorded after the last saved state of a killed optimize run; its step was played again")


def _check_state_games(out: Path, state: dict, validation: list) -> None:
    """The saved validation outcomes name exactly this run's validation tasks."""
    ids = {g.id for g in validation}
    if set(state["incumbent_validation"]) != ids:
        raise SkillosError(f"{out / 'state.json'}: its validation outcomes name {len(state['incumbent_validation'])} "
                           f"tasks, not this run's {len(ids)} validation tasks; rerun without --resume into another --out")


def precheck(cfg, out: Path, ledger, resume: bool, unseal: str | None) -> None:
    """Every refusal known before compute, made before the gates play anything: a resume whose
    state does not match (read, nothing changed), a sealed test split the ledger says was read."""
    _, per_epoch, total = positions(cfg)
    if resume:
        _resume_state(cfg, out, ledger, total, per_epoch, write=False)
    if ledger is not None and not (unseal or "").strip() and not (resume and (out / "test.sealed").exists()):
        SealedSplit(load_games(cfg, cfg.env.split, cfg.env.n_games), out / "test.sealed", ledger,
                    cfg.experiment.name, unseal).check_unread()


def preflight(cfg) -> SkillRepo:
    """What can be refused before anything is played: the three splits and the seed skills."""
    splits = {"env.train_split": cfg.env.train_split, "optimize.validation_split": cfg.optimize.validation_split,
              "env.split (sealed test)": cfg.env.split}
    if len(set(splits.values())) < 3:
        raise SkillosError("optimize needs three different splits: "
                           + ", ".join(f"{k} = {v}" for k, v in splits.items()))

    read_meta(_meta_source(cfg))  # a meta skill that cannot be read: refused before any game
    seed = _seed_repo(cfg)
    if cfg.optimize.target == "document":
        return seed_document(cfg, seed)
    return seed


def _seed_repo(cfg) -> SkillRepo:
    folder = cfg.optimize.seed_skills
    if folder is None:
        return SkillRepo(None)

    path = relative_to_config(cfg, folder)
    if not path.is_dir():
        raise SkillosError(f"optimize.seed_skills: {path} is not a folder")
    try:
        return SkillRepo.load(path).copy()  # in memory: the seed folder is never written
    except SkillError as exc:
        raise SkillosError(f"optimize.seed_skills: {exc}") from None
