"""Dream and the LLM miner: more train signal for a night, under its hard budget.

* **Dream** (SkillOpt's `dream_factor`): each mined train task gets `sleep.dream_factor`
  perturbed variants, the same request reworded, with the same checks. Rules reword it with fixed
  framings (no model); a model optimizer (`sleep.optimizer`) paraphrases it in one call per task,
  and a failed call falls back to the rules for that task (counted). Only train tasks are dreamed,
  and a variant that equals any real task is dropped: validation and the sealed test stay the
  user's own requests.
* **LLM miner** (`sleep.llm_miner`): a request the rules found no check for is shown to the
  optimizer model, which must reply with checks in the task-file rules (`mine.RULES`); a reply
  whose checks do not validate, or that has none, drops the request (counted). A rubric needs a
  judge (`judge:`): without one, rubric checks are dropped before the task is kept.

Every model call goes through the night's `Caller`, so its hard caps hold: a cap reached while
mining or dreaming stops that stage with what it made (`stopped_because`), and the night stops
at its next call the usual way.
"""

from __future__ import annotations

import json
import re

from skillos.config.sleep import DREAM_FRAMINGS
from skillos.errors import SkillosError
from skillos.training.textopt.sleep.mine import Task, task_id, validate_checks

FRAMINGS = ("Please {p}", "{p}\n\nThanks.", "I need your help with this: {p}", "Quick one: {p}",
            "Could you do this for me? {p}", "{p}\n\n(Same request as before.)")
assert len(FRAMINGS) == DREAM_FRAMINGS  # sleep.dream_factor's bound, checked when a config loads
DREAM_PROMPT = ("Reword the request below {n} different ways. Keep its meaning and every constraint it states "
                "(quoted text, sections, lengths, tools), so the same checks still apply. Reply with one reworded "
                "request per line and nothing else.\n\nRequest: {prompt}\nChecks: {checks}")
MINER_PROMPT = ("A user asked an AI assistant the request below{feedback}. If whether an answer does what they asked "
                "can be checked, reply with JSON only: {{\"checks\": [...]}}, each check one of "
                "{{\"rule\": \"contains\"|\"not_contains\"|\"regex\"|\"section\", \"value\": ...}}, "
                "{{\"rule\": \"length\", \"max\": N, \"unit\": \"words\"|\"lines\"|\"chars\"}}, "
                "{{\"rule\": \"tool\", \"name\": ...}}, {{\"rule\": \"no_refusal\"}}, "
                "{{\"rule\": \"rubric\", \"rubric\": ...}}. If it cannot be checked, reply {{\"checks\": []}}."
                "\n\nRequest: {prompt}")


def _variant(task: Task, prompt: str) -> Task:
    return Task(task_id(prompt), prompt, [dict(c) for c in task.checks], "dream", list(task.sessions), task.skill,
                "train", origin=task.id)


def dream_rules(task: Task, factor: int) -> list[str]:
    return [f.format(p=task.prompt.strip()) for f in FRAMINGS][:factor]


def _stage_stop(counts: dict, exc: Exception) -> None:
    counts["stopped_because"] = str(exc)


def dream(train: list[Task], factor: int, taken: set, caller, chat, max_tokens: int) -> tuple[list, dict]:
    """(variants, counts): up to `factor` variants of each train task; by the model when `chat`
    is given (through `caller`), else by the rules."""
    from skillos.training.textopt.sleep.replay import BudgetExhausted, Outage

    counts = {"factor": factor, "from_tasks": 0, "variants": 0, "by": "model" if chat else "rules",
              "model_failed": 0, "collides_with_a_real_task": 0, "stopped_because": None}
    variants, seen = [], set(taken)
    for task in train if factor > 0 else []:
        prompts = []
        if chat is not None:
            messages = [{"role": "user", "content": DREAM_PROMPT.format(n=factor, prompt=task.prompt[:4000],
                                                                        checks=json.dumps(task.checks)[:1000])}]
            try:
                reply = caller.call(chat, messages, max_tokens)
            except (BudgetExhausted, Outage) as exc:
                _stage_stop(counts, exc)
                break
            if reply is None:
                counts["model_failed"] += 1
            else:
                prompts = [re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", x).strip() for x in reply.text.splitlines()]
                prompts = [x for x in prompts if x and x != task.prompt.strip()][:factor]
        prompts += [p for p in dream_rules(task, factor) if p not in prompts][:factor - len(prompts)]
        made = 0
        for p in prompts:
            tid = task_id(p)
            if tid in seen:
                counts["collides_with_a_real_task"] += tid in taken
                continue
            seen.add(tid)
            variants.append(_variant(task, p))
            made += 1
        counts["from_tasks"] += made > 0
    counts["variants"] = len(variants)
    return variants, counts


def llm_mine(unchecked: list[dict], taken: set, judge: bool, caller, chat, max_tokens: int) -> tuple[list, dict]:
    """(tasks, counts): the requests the rules could not check, each kept only with checks the
    model stated and the task-file rules accept."""
    from skillos.training.textopt.sleep.replay import BudgetExhausted, Outage

    counts = {"requests": len(unchecked), "asked": 0, "tasks": 0, "uncheckable": 0, "invalid_reply": 0,
              "model_failed": 0, "duplicate": 0, "stopped_because": None}
    tasks, seen = [], set(taken)
    for u in unchecked:
        feedback = f", then said: {u['feedback'][:500]!r}" if u.get("feedback") else ""
        messages = [{"role": "user", "content": MINER_PROMPT.format(feedback=feedback, prompt=u["prompt"][:4000])}]
        try:
            reply = caller.call(chat, messages, max_tokens)
        except (BudgetExhausted, Outage) as exc:
            _stage_stop(counts, exc)
            break
        counts["asked"] += 1
        if reply is None:
            counts["model_failed"] += 1
            continue
        found = re.search(r"\{.*\}", reply.text, re.S)
        try:
            checks = json.loads(found.group(0)).get("checks") if found else None
        except (ValueError, AttributeError):
            checks = None
        if not isinstance(checks, list):
            counts["invalid_reply"] += 1
            continue
        checks = [c for c in checks if judge or not (isinstance(c, dict) and c.get("rule") == "rubric")][:4]
        try:
            checks = validate_checks(checks, "llm miner reply")
        except SkillosError:
            counts["uncheckable"] += 1
            continue
        tid = task_id(u["prompt"])
        if tid in seen:
            counts["duplicate"] += 1
            continue
        seen.add(tid)
        tasks.append(Task(tid, u["prompt"], checks, "llm-mined", [u["session"]], u.get("skill")))
    counts["tasks"] = len(tasks)
    return tasks, counts
