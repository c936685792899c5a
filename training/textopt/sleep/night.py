"""One night: harvest → mine → replay the current skill and a candidate → gate on validation →
read the sealed test once → stage a proposal. `run_night` is the library entry point (the CLI and
the public API wrap it): it runs the launch gates itself, records the night in the ledger as an
experiment run with evals, candidates and operational failures, and never writes a live skill.

The consolidation is `skillos optimize`'s: a textual learning rate (`edits_allowed`) bounds the
lines a step may add to the skill's learned block, `RejectedMemory` keeps rejected edits across
nights, `calibrate` refuses a gate that accepts a copy of the skill over itself,
`stats.accept_candidate` decides (indecisive when too much is unmeasured), and `SealedSplit` reads the test tasks once,
corrected for every candidate tried on them, over all nights.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

from skillos.errors import SkillosError
from skillos.registry import NO_MODEL, model_backends
from skillos.safety import RunLock
from skillos.training.textopt.candidates import (Books, CalibrationFailed, Candidate, Described, RejectedMemory, SealedSplit,
                                         Standing, broke, calibrated, edits_allowed, run_candidates, sealed_report)
from skillos.training.textopt.sleep.dream import dream, llm_mine
from skillos.training.textopt.sleep.mine import Task, assign_splits, load_tasks, mine
from skillos.training.textopt.sleep.replay import (DEFAULT_MAX_TOKENS, OFFLINE_WRITER, Budget, BudgetExhausted, Caller,
                                           Outage, Outcome, Replayer, SkillFollower, estimate_tokens,
                                           system_prompt)
from skillos.training.textopt.sleep.stage import (END, NIGHT, learned_lines, outside_block, read_live_skill,
                                          recover_nights, sleep_home, stamp, with_learned, write_proposal)
from skillos.config.derived import relative_to_config
from skillos.config.experiment import ExperimentConfig
from skillos.evals import stats
from skillos.evals.backends.chat import make_chat
from skillos.files import write_atomic
from skillos.ledger import Ledger
from skillos.ledger.experiments import record_experiment
from skillos.ledger.store import actor
from skillos.repo import parse_skill
from skillos.repo.skill import SkillError
from skillos.safety import Ticker


def preflight(cfg) -> tuple[Path, str]:
    """What is refused before anything is read or spent: the live skill and the backends."""
    s = cfg.sleep
    if not s.skill:
        raise SkillosError("sleep.skill: name the live skill folder a night improves (it holds SKILL.md)")
    if s.model.backend not in model_backends() and not _offline(s.model):
        raise SkillosError(f"sleep.model.backend: a night replays tasks with a model backend "
                           f"({', '.join(model_backends())}), got {s.model.backend!r} (the offline example uses "
                           f"backend heuristic with model {OFFLINE_WRITER}: training/configs/sleep-example/)")
    # The sleep settings' own rules (backends, gate, schedule, edits, budget, shares, dream_factor's
    # bound) are the config's: a night's config arrives validated (api.sleep).

    return read_live_skill(relative_to_config(cfg, s.skill))


def _offline(model) -> bool:
    return model.backend == NO_MODEL and model.model == OFFLINE_WRITER


def _chat(model):
    return SkillFollower() if _offline(model) else make_chat(model)


def sleep_section(cfg):
    """cfg.sleep with its transcript folders resolved beside the config file (~ expanded)."""
    s = cfg.sleep
    return dataclasses.replace(s, **{k: str(relative_to_config(cfg, Path(getattr(s, k)).expanduser()))
                                     for k in ("claude_dir", "codex_dir")})


def gather(cfg, tasks_file=None, home: Path | None = None, echo=None, unchecked: list | None = None
           ) -> tuple[list[Task], dict]:
    """The night's tasks: a reviewed task file, or mined from a fresh harvest (digest under `home`).
    Relative transcript folders resolve beside the config file, like every input it names.
    `unchecked` receives the mined requests the rules found no check for (the LLM miner's input)."""
    from skillos.training.textopt.sleep.harvest import harvest

    path = tasks_file or cfg.sleep.tasks
    if path:
        tasks = load_tasks(relative_to_config(cfg, path))
        return tasks, {"source": f"reviewed task file {path}", "sessions": None, "mined": None}
    h = harvest(sleep_section(cfg), home, progress=Ticker(echo, "harvest: transcript files read") if echo else None)
    tasks, counts = mine(h.sessions, judge=cfg.judge.backend is not None, unchecked=unchecked)
    if echo:
        echo(f"mine: {len(tasks)} checkable tasks from {len(h.sessions)} sessions "
             f"({counts.get('candidates', 0)} candidates; dropped {counts.get('dropped') or 'none'})")
    return tasks, {"source": "mined", "sessions": len(h.sessions), "harvest": h.summary(), "mined": counts}


def _model(s):
    return s.model if s.model.max_tokens else dataclasses.replace(s.model, max_tokens=DEFAULT_MAX_TOKENS)


def plan_night(cfg, tasks_file=None) -> dict:
    """The plan and its worst-case cost, before anything is spent (read-only: no digest written)."""
    skill_path, text = preflight(cfg)
    s = cfg.sleep
    unchecked: list = []
    tasks, source = gather(cfg, tasks_file, unchecked=unchecked)
    splits = assign_splits(tasks, s.validation_share, s.test_share)
    model = _model(s)

    def calls(ts):
        return sum(1 + any(c["rule"] == "rubric" for c in t.checks) for t in ts)

    train, val, test = (calls(splits[k]) for k in ("train", "validation", "test"))
    proposer = 1 if s.optimizer.backend != NO_MODEL else 0
    # the LLM miner asks once per unchecked request (each may become a train task, replayed at
    # every step); dreaming asks once per train task and replays its variants at every step
    mined = len(unchecked) if s.llm_miner and source.get("source") == "mined" else 0
    dreams = (len(splits["train"]) + mined) * s.dream_factor
    train += (mined + dreams) * (1 + (cfg.judge.backend is not None))
    worst_calls = 2 * val + s.steps * (train + val + proposer) + 2 * test + mined + (
        len(splits["train"]) + mined if s.dream_factor and proposer else 0)
    longest = max([len(t.prompt) for t in tasks] or [0])
    room = " " * (80 * s.steps * s.max_edits)  # the learned lines a night may add, ~80 characters each
    per_call = estimate_tokens([{"content": system_prompt(text + room, skill_path.parent.name)},
                                {"content": "x" * longest}], model.max_tokens)
    worst = {"calls": worst_calls, "tokens": worst_calls * per_call, "minutes": s.budget.max_minutes}
    caps = dataclasses.asdict(s.budget)
    binds = [k for k, cap in (("calls", caps["max_calls"]), ("tokens", caps["max_tokens"])) if worst[k] > cap]
    return {"skill": str(skill_path), "model": f"{s.model.backend}:{s.model.model}",
            "optimizer": s.optimizer.backend if s.optimizer.backend == NO_MODEL else
            f"{s.optimizer.backend}:{s.optimizer.model}", "steps": s.steps, **source,
            "tasks": {k: len(v) for k, v in splits.items()}, "worst_case": worst, "per_call_tokens": per_call,
            "caps": caps, "caps_that_bind": binds,
            "note": "worst case: every task replayed at every step; a cap that binds stops the night cleanly "
                    "there, with what it had measured and no proposal"}


# -- proposers ----------------------------------------------------------------------------------
def _line_for(check: dict) -> str | None:
    rule = check["rule"]
    return {"contains": lambda: f"- Always include `{check['value']}` in the answer.",
            "not_contains": lambda: f"- Never write `{check['value']}`.",
            "section": lambda: f"- Include a `## {check['value']}` section.",
            "regex": lambda: f"- The answer must match `{check['value']}`.",
            "length": lambda: f"- Keep the answer within {check.get('min') or 0}-{check.get('max') or 'any'} "
                              f"{check.get('unit', 'chars')}.",
            "tool": lambda: f"- Use the `{check['name']}` tool.",
            "no_refusal": lambda: "- Do what is asked; do not refuse or apologize instead.",
            }.get(rule, lambda: None)()


def line_key(line: str) -> str:
    return "learned " + hashlib.sha256(" ".join(line.split()).encode()).hexdigest()[:12]


class HeuristicProposer:
    """No model: each failed train task's rules become lines of the learned block, the most
    often failed first; a line already there or rejected on an earlier night is not proposed."""

    def propose(self, text: str, failing: list, memory, budget: int, caller=None) -> tuple[str, list[str]]:
        banned = {k for r in memory.items if r.verdict == "reject" for k in r.keys}
        have = set(learned_lines(text))
        count: dict = {}
        for task, _ in failing:
            for check in task.checks:
                line = _line_for(check)
                if line and line not in have and line_key(line) not in banned:
                    count[line] = count.get(line, 0) + 1
        lines = sorted(count, key=lambda x: (-count[x], x))[:budget]
        return with_learned(text, learned_lines(text) + lines), lines


class LLMProposer:
    """A model reads the skill, the failed train tasks and the rejected edits, and proposes lines
    for the learned block; with `sleep.edit_anywhere` it may instead return the whole SKILL.md in a
    ```markdown block, kept only if it parses and changes at most the step's budget of lines."""

    PROMPT = ("You improve an agent skill (SKILL.md) from tasks it failed. Reply with at most {budget} short "
              "lines to add to its learned block, each starting with '- ', and nothing else.{anywhere}"
              "\n\nSkill:\n{skill}\n\n{steering}\n\nFailed tasks (request, checks, why it failed):\n{failures}")
    ANYWHERE = (" Or, if the fix belongs elsewhere in the skill, reply with the whole new SKILL.md in one "
                "```markdown block, changing at most {budget} lines.")

    def __init__(self, config, edit_anywhere: bool = False):
        self.config = config if config.max_tokens else dataclasses.replace(config, max_tokens=DEFAULT_MAX_TOKENS)
        self.chat = make_chat(self.config)
        self.edit_anywhere = edit_anywhere

    def propose(self, text: str, failing: list, memory, budget: int, caller=None) -> tuple[str, list[str]]:
        failures = "\n".join(f"- {t.prompt[:300]} | {json.dumps(t.checks)[:300]} | {o.reason[:200]}" for t, o in failing)
        anywhere = self.ANYWHERE.format(budget=budget) if self.edit_anywhere else ""
        messages = [{"role": "user", "content": self.PROMPT.format(budget=budget, skill=text, failures=failures,
                                                                   steering=memory.steering(), anywhere=anywhere)}]
        reply = caller.call(self.chat, messages, self.config.max_tokens)
        if reply is None:
            return text, []
        banned = {k for r in memory.items if r.verdict == "reject" for k in r.keys}
        rewrite = self._rewrite(text, reply.text, budget) if self.edit_anywhere else None
        if rewrite is not None:
            return (text, []) if line_key(rewrite[1][0]) in banned else rewrite
        have = set(learned_lines(text))
        lines = [x.strip() for x in reply.text.splitlines() if x.strip().startswith("- ")]
        lines = [x for x in lines if x not in have and line_key(x) not in banned and END not in x][:budget]
        return with_learned(text, learned_lines(text) + lines), lines

    @staticmethod
    def _rewrite(text: str, reply: str, budget: int):
        """(new SKILL.md, [its summary]) from a fenced whole-skill reply within the budget, else None."""
        import difflib
        import re

        found = re.search(r"```(?:markdown|md)?\n(---\n.*?)```", reply, re.S)
        if not found:
            return None
        new = found.group(1)
        try:
            parse_skill(new)
        except SkillError:
            return None
        changed = sum(1 for d in difflib.ndiff(text.splitlines(), new.splitlines()) if d[:1] in "+-")
        if new == text or changed > 2 * budget:  # a replaced line is one - and one +
            return None
        digest = hashlib.sha256(new.encode()).hexdigest()[:12]  # the summary is the memory's key
        return new, [f"rewrite of the skill ({changed} diff lines, sha256 {digest})"]


# -- the night ----------------------------------------------------------------------------------
def _summary(outcomes: dict) -> dict:
    values = [o.success for o in outcomes.values()]
    measured = [v for v in values if v is not None]
    return {"attempted": len(values), "measured": len(measured), "unmeasured": len(values) - len(measured),
            "successes": sum(measured), "success_rate": sum(measured) / len(measured) if measured else None,
            "coerced_actions": 0, "actions": len(values)}


def _rate(summary: dict) -> str:
    return f"{summary['successes']}/{summary['measured']} measured of {summary['attempted']}"


def run_night(cfg, *, gate, ledger=None, tasks_file=None, echo=print, unseal: str | None = None) -> dict:
    """Run one night for `cfg.sleep.skill`. Returns the report; stages a proposal folder only when
    a candidate passed the gate and the night ran to its end (not stopped by a cap or an outage).
    The sealed test is sealed in the ledger task by task (content hash, under the experiment's
    name): a task one night read as the test is left out of every later night's test unless a
    person passes `unseal` (a reason, recorded as an override).

    `gate(cfg, ledger)` runs the launch gates (raising to refuse) once the ledger is open and
    before any model call: `skillos.sleep` passes `gates.enforce` (training sits below gates)."""
    skill_path, seed_text = preflight(cfg)
    cfg = _named(cfg, skill_path.parent.name)
    parts = _Parts(cfg)  # a missing key or model is refused before the gates run
    own, night = ledger is None, None
    ledger = Ledger() if own else ledger
    try:
        for number in recover_nights(sleep_home(cfg.sleep), ledger):  # nights killed before: recorded as aborted
            echo(f"night {number} was killed mid-run: recorded as aborted")
        gate(cfg, ledger)
        night = Night(cfg, parts, ledger, skill_path, seed_text, echo)
        night.begin(tasks_file)
        return night.run(unseal)
    except BaseException as exc:
        if night is not None:
            night.abort(exc)
        raise
    finally:
        if night is not None and night.lock is not None:
            night.lock.release()
        if own:
            ledger.close()


class _Parts:
    """The models a night calls: the replaying model, the judge and the proposer."""

    def __init__(self, cfg):
        s = cfg.sleep
        self.model = _model(s)
        self.chat = _chat(self.model)
        self.judge = make_chat(cfg.judge) if cfg.judge.backend else None
        self.proposer = (HeuristicProposer() if s.optimizer.backend == NO_MODEL
                         else LLMProposer(s.optimizer, s.edit_anywhere))


class Night:
    """One night, and its side of the candidate loop (candidates.Search): a step replays the
    incumbent on the train tasks and their dreamed variants, the proposer writes lines from what
    failed; the gate adds `no_regress`."""

    def __init__(self, cfg, parts: _Parts, ledger, skill_path: Path, seed_text: str, echo):
        self.cfg, self.s, self.parts, self.ledger, self.echo = cfg, cfg.sleep, parts, ledger, echo
        self.skill_path, self.seed_text, self.name = skill_path, seed_text, skill_path.parent.name
        self.home = sleep_home(cfg.sleep)
        self.run_id, self.ended, self.lock, self.night_id, self.night_dir = None, False, None, None, None

    def begin(self, tasks_file) -> None:
        """Tasks gathered (harvested, mined, dreamed) and split; the night's folder, lock and
        ledger run; the caps start here: the gates and the harvest are not the night's spending."""

        s, echo, ledger, proposer = self.s, self.echo, self.ledger, self.parts.proposer
        unchecked: list = []
        tasks, source = gather(self.cfg, tasks_file, self.home, echo, unchecked)
        self.caller = Caller(Budget(s.budget.max_calls, s.budget.max_tokens, s.budget.max_minutes),
                             s.max_consecutive_errors)
        optimizer_chat = getattr(proposer, "chat", None)
        if s.llm_miner and source.get("source") == "mined":
            more, source["llm_miner"] = llm_mine(unchecked, {t.id for t in tasks}, self.cfg.judge.backend is not None,
                                                 self.caller, optimizer_chat, proposer.config.max_tokens)
            tasks = sorted(tasks + more, key=lambda t: t.id)
            echo(f"llm miner: {len(more)} checkable tasks from {len(unchecked)} requests the rules could not check")
        self.tasks, self.source, self.splits = tasks, source, assign_splits(tasks, s.validation_share, s.test_share)
        self.dreams, source["dream"] = dream(self.splits["train"], s.dream_factor, {t.id for t in tasks}, self.caller,
                                             optimizer_chat, proposer.config.max_tokens if optimizer_chat else 0)
        if s.dream_factor:
            echo(f"dream: {len(self.dreams)} variants of {source['dream']['from_tasks']} train tasks "
                 f"({source['dream']['by']})")
        self.night_id = stamp()
        while (self.home / "nights" / self.night_id).exists():
            self.night_id += "x"
        self.night_dir = self.home / "nights" / self.night_id
        self.night_dir.mkdir(parents=True)
        self.lock = RunLock(self.night_dir).acquire()  # held while the night runs: a dead holder means it was killed
        (self.night_dir / "tasks.jsonl").write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks + self.dreams))
        echo(f"night {self.night_id}: {len(tasks)} tasks ({', '.join(f'{len(v)} {k}' for k, v in self.splits.items())}) "
             f"for {self.name}")
        self.experiment = record_experiment(ledger, self.cfg)
        self.run_id = ledger.start_run(self.experiment, "sleep-night",
                                       config={**self.cfg.to_dict(), "night": self.night_id}, seed=self.cfg.env.seed)
        write_atomic(self.night_dir / NIGHT, json.dumps({
            "night": self.night_id, "run_id": self.run_id, "experiment_id": self.experiment,
            "skill": str(self.skill_path), "pid": os.getpid(), "started_at": stamp()}))
        self.replayer = Replayer(self.caller, self.parts.chat, self.parts.model.max_tokens, self.parts.judge)
        self.memory = RejectedMemory(self.home / "rejected.json")
        self.night_no = len(list((self.home / "nights").iterdir()))
        self.gate_args = (s.gate.mode, s.gate.k, s.gate.max_unmeasured)

    def play(self, text: str, ts: list, arm: str) -> dict:
        """Replay `ts` with skill `text`; every outcome logged as it lands, the arm's eval recorded
        with what it measured even when a cap or an outage cuts it short."""
        out, tick, log = {}, Ticker(self.echo, f"{arm}: tasks replayed", len(ts)), self.night_dir / "outcomes.jsonl"
        try:
            for t in ts:
                tick(len(out))
                try:
                    out[t.id] = self.replayer.run(t, text, self.name)
                except Outage as exc:  # the call that tipped it was made and failed: unmeasured
                    out[t.id] = Outcome(None, f"model call failed: {exc}")
                    raise
                finally:
                    if t.id in out:
                        with open(log, "a", encoding="utf-8") as fh:
                            fh.write(json.dumps({"arm": arm, "task": t.id, **out[t.id].to_dict()}) + "\n")
        finally:
            tick(len(out))
            if ts:
                self.ledger.add_eval(self.run_id, arm, _summary(out), str(log), None)
        return out

    def outcomes(self, text: str, ts: list, arm: str) -> dict:
        return {k: o.success for k, o in self.play(text, ts, arm).items()}

    def propose(self, step: int, now: Standing) -> Candidate | None:
        s, echo, train_tasks = self.s, self.echo, self.splits["train"] + self.dreams
        budget = edits_allowed(step, s.steps, s.max_edits, s.min_edits, s.schedule)
        train = self.play(now.skill, train_tasks, f"train-{step}")
        failing = [(t, train[t.id]) for t in train_tasks if train[t.id].success is False]
        candidate, lines = self.parts.proposer.propose(now.skill, failing, self.memory, budget, self.caller)
        if not lines:
            echo(f"step {step}: no edit proposed ({len(failing)} failed train tasks, budget {budget})")
            return None
        if not s.edit_anywhere and outside_block(candidate) != outside_block(now.skill):
            raise SkillosError("internal: an edit reached outside the learned block")  # never expected
        try:
            parse_skill(candidate)
        except SkillError as exc:  # a proposal a person could not adopt is no candidate
            echo(f"step {step}: the proposed skill does not validate ({exc}); no candidate")
            return None
        return Candidate(candidate, lines, [line_key(x) for x in lines], self.night_no, step,
                         detail={"budget": budget, "failing": failing})

    def evaluate(self, candidate: Candidate) -> dict:
        return self.outcomes(candidate.skill, self.splits["validation"], f"candidate-{candidate.step}")

    def judge(self, step: int, incumbent_val: dict, cand_val: dict):
        verdict = stats.accept_candidate(incumbent_val, cand_val, *self.gate_args)
        lost = broke(incumbent_val, cand_val)
        if verdict.verdict == "accept" and self.s.no_regress and lost:
            verdict = dataclasses.replace(verdict, verdict="reject",
                                          reason=f"{verdict.reason}; no_regress: it broke {len(lost)} task(s)")
        return verdict

    def describe(self, candidate: Candidate, verdict, now: Standing, cand_val: dict, paired) -> Described:
        lines, failing, incumbent_val = candidate.edits, candidate.detail["failing"], now.validation
        from_tasks = [t.id for t, _ in failing]
        sessions = sorted({x for t, _ in failing for x in t.sessions})
        row = {"step": candidate.step, "budget": candidate.detail["budget"], "edits": lines, "from_tasks": from_tasks,
               "sessions": sessions, **verdict.to_dict(),
               "incumbent": _rate(_summary({k: _O(v) for k, v in incumbent_val.items()})),
               "candidate": _rate(_summary({k: _O(v) for k, v in cand_val.items()})),
               "broke": broke(incumbent_val, cand_val)}
        edits = json.dumps({"lines": lines, "from_tasks": from_tasks, "sessions": sessions, "night": self.night_id})
        line = (f"step {candidate.step}: {len(lines)} line(s) from {len(failing)} failed train tasks: "
                f"{verdict.verdict}: {verdict.reason}")
        return Described(row, "\n".join(f"+{x}" for x in lines), edits, line)

    def after_step(self, step: int, now: Standing) -> None:
        pass

    def measure(self, standing: Standing, unseal: str | None) -> tuple:
        """Calibrate, run the candidates, read the sealed test when one was accepted: (status,
        why it stopped, the A/A verdict, the test's result). A cap, an outage, a refused
        calibration or a spent test ends it, with what was accepted before kept in `standing`."""
        splits, aa, test = self.splits, None, None
        try:
            if not self.tasks:
                raise _NoTasks()
            standing.validation, aa = calibrated(
                lambda: self.outcomes(self.seed_text, splits["validation"], "incumbent-validation"),
                lambda: self.outcomes(self.seed_text, splits["validation"], "incumbent-copy"), self.gate_args)
            self.echo(f"A/A calibration: {aa.verdict} ({aa.reason})")
            books = Books(self.night_dir / "history.jsonl", self.ledger, self.run_id, self.echo, {
                "alpha": self.cfg.eval.alpha, "power": self.cfg.eval.power, "n_boot": self.cfg.eval.bootstrap})
            run_candidates(range(self.s.steps), standing, self.memory, self, books)
            if standing.accepted:
                tried = _candidates_on_test(self.home, standing.tried)
                why = f"night {self.night_id}: seed vs best after {standing.tried} candidates ({tried} over all nights)"
                final, left_out = read_test(self.ledger, self.cfg.experiment.name, splits["test"], self.night_dir,
                                            why, unseal)
                if left_out:
                    self.echo(f"sealed test: {len(left_out)} of {len(splits['test'])} task(s) were read as the test by "
                              "an earlier night and are left out (--unseal \"reason\" reads them again)")
                if not final:
                    raise _TestSpent(len(left_out))
                seed_test = self.outcomes(self.seed_text, final, "seed-test")
                best_test = self.outcomes(standing.skill, final, "best-test")
                comparison = stats.compare(seed_test, best_test, names=("best", "seed"), alpha=self.cfg.eval.alpha,
                                           power=self.cfg.eval.power, n_boot=self.cfg.eval.bootstrap)
                full = sealed_report(self.cfg, comparison, tried, standing.accepted, aa,
                                     _summary({k: _O(v) for k, v in seed_test.items()}),
                                     _summary({k: _O(v) for k, v in best_test.items()}), 1, self.night_dir,
                                     self.s.gate.mode)
                test = {k: full[k] for k in ("verdict", "comparison", "p_corrected", "seed", "best")}
                test.update(candidates_corrected_for=tried, read=len(final), sealed_left_out=len(left_out))
        except BudgetExhausted as exc:
            return "stopped", str(exc), aa, test
        except Outage as exc:
            return "outage", str(exc), aa, test
        except CalibrationFailed as exc:
            return "refused", str(exc), aa, test
        except _NoTasks:
            return "no-tasks", _no_tasks_reason(self.source), aa, test
        except _TestSpent as exc:
            test = {"verdict": f"not reportable: all {exc.args[0]} test task(s) were read as the test by an earlier "
                               "night (sealed in the ledger); a person may read them again with --unseal \"reason\"",
                    "read": 0, "sealed_left_out": exc.args[0], "comparison": None}
        return "finished", None, aa, test

    def run(self, unseal: str | None) -> dict:
        """The night measured, its report written, a proposal staged when one passed, the run ended."""
        standing = Standing(self.seed_text, {})  # read after a stop mid-step: what was accepted before it
        status, stop, aa, test = self.measure(standing, unseal)
        report = {"night": self.night_id, "status": status, "stopped_because": stop, "skill": str(self.skill_path),
                  "tasks": {k: len(v) for k, v in self.splits.items()}, "dreamed": len(self.dreams),
                  "harvest_sessions": self.source.get("sessions"),
                  "source": self.source, "calibration": aa.to_dict() if aa else None, "candidates": standing.history,
                  "accepted": standing.accepted, "test": test, "budget": self.caller.budget.to_dict(),
                  "model_call_errors": len(self.caller.errors), "proposal": None, "run_id": self.run_id,
                  "experiment_id": self.experiment}
        report["verdict"] = _verdict(report)
        if status == "finished" and standing.accepted:
            report["proposal"] = str(self.home / "proposals" / f"{self.night_id}-{self.name}")
            write_proposal(self.home, self.night_id, self.skill_path, self.seed_text, standing.skill, report,
                           self.tasks)  # that folder, whole
        write_atomic(self.night_dir / "report.json", json.dumps(report, indent=1))
        self.record_failures()
        # the night is its experiment's whole launch: the experiment ends with it, not `planned`
        self.ledger.end_experiment_run(self.run_id, status, report["verdict"],
                                       experiment_status="measured" if status == "finished" else None)
        self.ended = True
        self.echo(f"night {self.night_id}: {report['verdict']}")
        if status == "refused":
            raise CalibrationFailed(stop)
        return report

    def record_failures(self) -> None:
        """Model calls that failed and harvest errors, as operational failures of this run."""
        errors, where = self.caller.errors, {"experiment_id": self.experiment, "run_id": self.run_id}
        if errors:
            self.ledger.add_failure(f"sleep night {self.night_id}: {len(errors)} model call(s) failed, the tasks "
                                    f"they replayed are unmeasured; first error: {errors[0]}", "wasted-compute",
                                    kind="operational", detected_by="toolkit", **where)
        for error in (self.source.get("harvest") or {}).get("errors", []):
            self.ledger.add_failure(f"sleep harvest: {error}", "harness-bug", kind="operational",
                                    detected_by="toolkit", **where)

    def abort(self, exc: BaseException) -> None:
        """A crash, ^C or SIGTERM after the run began: the run says so, not "running" forever."""
        if self.run_id is None or self.ended:
            return
        killed = isinstance(exc, (KeyboardInterrupt, SystemExit))
        why = f"{type(exc).__name__}: {exc}"[:500]
        self.ledger.end_experiment_run(self.run_id, "aborted" if killed else "crashed", why)
        try:
            from skillos.files import write_atomic

            write_atomic(self.night_dir / "report.json", json.dumps({
                "night": self.night_id, "status": "aborted" if killed else "crashed", "stopped_because": why,
                "verdict": f"{'aborted' if killed else 'crashed'} ({why}); nothing staged", "skill": str(self.skill_path),
                "proposal": None, "run_id": self.run_id, "candidates": [], "accepted": 0}, indent=1))
        except OSError:
            pass


class _NoTasks(Exception):
    pass


class _TestSpent(Exception):
    """Every test task was read as the test by an earlier night."""


def read_test(ledger, experiment: str, tasks: list, night_dir: Path, why: str, unseal: str | None):
    """Read the night's sealed test once: (tasks read now, tasks left out because an earlier night
    read them as the test). Each task read is sealed in the ledger by its content hash (like
    optimize's split, under the experiment's name), so no later night, process or home folder
    reads it again; with `unseal` (a person's reason) the sealed ones are read again and the
    override is recorded as a process failure. This night's own seal file refuses a second read."""
    read_before = ledger.sealed(experiment, [t.id for t in tasks])
    fresh = [t for t in tasks if unseal or t.id not in read_before]
    left_out = [t for t in tasks if t not in fresh]
    if not fresh:
        return [], left_out
    SealedSplit(fresh, night_dir / "test.sealed").read(why)
    who, overridden = actor(), False
    for t in fresh:
        again = t.id in read_before
        ledger.read_sealed(experiment, t.id, why, str(night_dir.resolve()), who, unseal if again else None,
                           command="sleep night", record_override=again and not overridden)
        overridden = overridden or again  # one override row for the person's one decision
    return fresh, left_out


def _no_tasks_reason(source: dict) -> str:
    mined = source.get("mined") or {}
    return (f"no checkable task from {source.get('sessions')} sessions ({mined.get('candidates', 0)} candidates, "
            f"dropped {mined.get('dropped') or {}}); configure a judge: to keep rubric tasks, or pass --tasks FILE")


def _named(cfg, skill: str):
    """A config left at the default experiment name records its nights as `sleep:<skill>`."""
    if cfg.experiment.name != ExperimentConfig.name:
        return cfg
    named = dataclasses.replace(cfg, experiment=dataclasses.replace(cfg.experiment, name=f"sleep:{skill}"))
    named.source = cfg.source  # not a field: replace() drops it, and relative paths resolve against it
    return named


class _O:  # an outcome of a bare bool/None, for _summary
    def __init__(self, success):
        self.success = success


def _candidates_on_test(home: Path, tried: int) -> int:
    """Candidates tried against this sealed test over all nights (the test tasks are chosen by
    content hash, so every night reads the same ones): the Bonferroni factor of the claim."""
    path = home / "test_reads.json"
    reads = json.loads(path.read_text()) if path.is_file() else []
    reads.append(tried)
    write_atomic(path, json.dumps(reads))
    return sum(reads)


def _verdict(r: dict) -> str:
    if r["status"] == "stopped":
        return f"stopped at a budget cap ({r['stopped_because']}); nothing staged"
    if r["status"] == "outage":
        return f"endpoint outage ({r['stopped_because']}); nothing staged, no task scored as failed"
    if r["status"] == "refused":
        return f"refused: {r['stopped_because']}"
    if r["status"] == "no-tasks":
        return f"nothing to learn from: {r['stopped_because']}"
    if not r["accepted"]:
        return f"no candidate passed the gate ({len(r['candidates'])} tried); nothing staged"
    return f"{r['accepted']} candidate(s) accepted; proposal staged; sealed test: {r['test']['verdict']}"
