"""Static checks: the config against its reference table, arithmetic, and small files.
CPU-only, no heavy imports, well under a second."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from skillos.config.backend import decoding_of
from skillos.config.fields import did_you_mean
from skillos.checking import Context, Result, machine, same, static, training_only
from skillos.registry import BACKENDS, COMPUTE, NO_MODEL, TORCH_FIRST, TRAINERS, compute_of, trainer_of
from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos.evals import stats
from skillos.evals.arms import game_sets
from skillos.evals.backends.build import decodings
from skillos.evals.envs.registry import environment, rollout_environment
from skillos.evals.protocol import PINS, load_spec
from skillos.gates import reference as refs
from skillos.ledger.store import LedgerError
from skillos.training.common.warmup import format_warmup_steps

# TRL's GRPOConfig defaults that are not the paper's: a config must choose, not inherit.
TRL_DEFAULTS = {"training.loss_type": "dapo", "training.lr_scheduler_type": "linear"}
DERIVED = ("prompts_per_step", "completions_per_step")
TRAINING_ONLY = ("training.", "reward.", "judge.", "prompts_per_step", "completions_per_step",
                 "env.reasoning.min_group_size", "skillgate.")
DECODING = ("temperature", "top_p", "top_k")
MIN_REASONING_TOKENS = 4096
MAX_ERROR_RATE = 0.02
MAX_CONTROL_AGE_DAYS = 7.0
ASSUMED_DISCORDANCE = 0.3

INCIDENTS = {
    "prompts_per_step": "a batch silently different from the paper's (per-device x accumulation x "
                        "processes, read as prompts or as completions) changed the optimization being reproduced",
    "completions_per_step": "a batch silently different from the paper's (per-device x accumulation x "
                            "processes, read as prompts or as completions) changed the optimization being reproduced",
    "executor.temperature": "an executor sampled with the server's defaults (T 1.0) instead of its model card's",
    "executor.top_p": "an executor sampled with the server's defaults (top_p 1) instead of its model card's",
    "executor.top_k": "an executor sampled with the server's defaults (no top_k) instead of its model card's",
    "retrieval.top_k": "the executor saw a different number of skills than the paper's top-5",
    "env.max_steps": "a default of 10 steps biased long tasks low",
    "executor.history_length": "an executor shown a different history is a different executor",
    "judge.model": "a weaker judge changes r_cnt",
    "executor.model": "lift on one executor does not predict lift on another",
}
TABLE_INCIDENT = "a run that silently differs from the paper it claims to reproduce"


def get(cfg, key: str):
    value = cfg
    for name in key.split("."):  # nested sections too: env.reasoning.min_group_size
        value = getattr(value, name)
    return value


from skillos.config.derived import completions_per_step, groups_per_step  # noqa: E402 - derived in config/derived.py

def derived(cfg, key: str):
    return {"prompts_per_step": groups_per_step, "completions_per_step": completions_per_step}[key](cfg)


def judge_used(cfg) -> bool:
    """The judge scores r_cnt only in the training of a trainer whose reward asks it, with lambda_cnt > 0."""
    return cfg.training.is_set() and trainer_of(cfg).judge_reward and bool(cfg.reward.lambda_cnt) \
        and cfg.judge.backend is not None


def _applies(ctx: Context, key: str) -> str | None:
    """None if the table row applies to this config, else why it does not."""
    if key.startswith(TRAINING_ONLY) and not ctx.training:
        return "not a training config (no training section)"
    if key == "executor.history_length" and not ctx.llm_executor:
        return "the heuristic executor has no prompt history"
    section, _, leaf = key.rpartition(".")
    if leaf in DECODING and section == "executor" and not ctx.llm_executor:
        return "the heuristic executor samples nothing"
    if key == "executor.decoding" and not ctx.llm_executor:
        return "the heuristic executor writes no action text"
    if leaf in DECODING and section == "executor" and ctx.cfg.executor.decoding == "admissible":
        return (f"executor.decoding admissible samples nothing: the most likely admissible action is taken "
                "(the departure is table.executor.decoding's)")
    if leaf in DECODING and section == "judge" and not judge_used(ctx.cfg):
        return "no judge scores this run (r_cnt off, no judge backend, or not curator training)"
    if key == "skillgate.selector_credit" and not trainer_of(ctx.cfg).selector_credit:
        return f"skillgate.trainer {ctx.cfg.skillgate.trainer} has no selector credit"
    return None


def _sampler_defaults(backend: str | None, otherwise: str) -> str:
    """What a model backend samples with when a section's decoding is left unset."""
    entry = BACKENDS.get(backend)
    return entry.sampler_defaults if entry and entry.sampler_defaults else otherwise


def not_grpo(ctx: Context, check: str, gates: tuple) -> Result | None:
    """A SKIP for a GRPO-only check on an SFT / DPO baseline (no groups, no generations)."""
    trainer = TRAINERS.get(ctx.cfg.skillgate.trainer)
    if trainer is not None and trainer.grpo:
        return None
    return Result(check, gates, "SKIP", detail=f"skillgate.trainer {ctx.cfg.skillgate.trainer} is not GRPO: no "
                  "generations, groups or GRPO loss")


@static
def reference(ctx: Context) -> Result:
    name = ctx.cfg.reference
    if name is None:
        if ctx.training:
            return Result("reference", (1,), "FAIL", "reference", None, "a table, e.g. "
                          "skillos-paper/alfworld", "a training config that names no reference "
                          "cannot be diffed against the paper")
        return Result("reference", (1,), "SKIP", detail="no reference named; nothing to diff")
    if ctx.reference is None:
        return Result("reference", (1,), "FAIL", "reference", name, ", ".join(refs.names()),
                      "a run diffed against no table", "unknown reference")
    return Result("reference", (1,), "PASS", "reference", name, name,
                  detail=f"diffing against {ctx.reference.source} ({name})")


@static
def table(ctx: Context) -> list[Result]:
    """Every Table-4 value, by its config key."""
    if ctx.reference is None:
        return []
    out = []
    for key, expected in ctx.reference.values.items():
        check = f"table.{key}"
        why_not = _applies(ctx, key)
        if why_not or expected is None:
            out.append(Result(check, (1,), "SKIP", key, None if why_not else _seen(ctx.cfg, key),
                              expected, detail=why_not or "not applicable in the reference"))
            continue
        seen = _seen(ctx.cfg, key)
        detail = "" if ctx.reference.source_of(key) == ctx.reference.source else \
            f"source: {ctx.reference.source_of(key)}"
        ok = seen is not None and same(seen, expected)
        out.append(ctx.expect(check, (1,), key, seen, expected, ok,
                              INCIDENTS.get(key, TABLE_INCIDENT), detail))
    return out


def _seen(cfg, key: str):
    if key == "training.format_warmup_steps":  # its None means a number, which the trainer owns

        return format_warmup_steps(cfg)
    return derived(cfg, key) if key in ("prompts_per_step", "completions_per_step") else get(cfg, key)


def batch_line(prompts, completions, g) -> str:
    def show(x):
        return "unset" if x is None else f"{x:g}" if isinstance(x, float) else str(x)
    return f"{show(prompts)} prompts x {show(g)} = {show(completions)} completions per step"


@static
@training_only(1, 3)
def batch(ctx: Context) -> Result:
    """Prompts per step and completions per step, for the config and the reference; the quantity
    the reference's "batch" means is diffed (a config that reads it otherwise declares it)."""
    check, gates = "batch", (1, 3)
    cfg, t = ctx.cfg, ctx.cfg.training
    if not_grpo(ctx, check, gates):
        return not_grpo(ctx, check, gates)
    prompts, completions = groups_per_step(cfg), completions_per_step(cfg)
    config_line = (f"config: {batch_line(prompts, completions, t.num_generations)} ({t.per_device_train_batch_size} "
                   f"per device x {t.gradient_accumulation_steps} accumulation x {cfg.compute.num_processes} processes)")
    b = ctx.reference.batch if ctx.reference else None
    if b is None:
        return Result(check, gates, "PASS", "prompts_per_step", prompts, None,
                      detail=f"{config_line}; the reference states no batch"
                      + (f" ({ctx.reference.name})" if ctx.reference else ""))
    g = ctx.reference.values.get("training.num_generations") or t.num_generations
    ref_prompts = b["size"] if b["means"] == "prompts" else (b["size"] / g if g else None)
    ref_completions = b["size"] * g if b["means"] == "prompts" and g else b["size"] if b["means"] == "completions" else None
    key = f"{b['means']}_per_step"
    seen, expected = (prompts, b["size"])
    if b["means"] == "completions":
        seen = completions
    detail = (f"{config_line}; reference: {batch_line(ref_prompts, ref_completions, g)} (its batch {b['size']} means "
              f"{b['means']} per step; source: {b['source'].strip()})")
    return ctx.expect(check, gates, key, seen, expected, seen is not None and same(seen, expected),
                      INCIDENTS[key], detail)


@static
def deepspeed_accumulation(ctx: Context) -> Result:
    check, gates = "deepspeed-accumulation", (1,)
    path_value = ctx.cfg.compute.deepspeed_config
    if not path_value:
        return Result(check, gates, "SKIP", detail="no compute.deepspeed_config")
    path = ctx.path(path_value)
    incident = "DeepSpeed's own gradient_accumulation_steps silently overrode the trainer's"
    try:
        ds = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return Result(check, gates, "FAIL", "compute.deepspeed_config", str(path), "a readable JSON file",
                      incident, f"cannot read it: {exc}")
    want = ctx.cfg.training.gradient_accumulation_steps
    seen = ds.get("gradient_accumulation_steps", "auto")
    if seen == "auto":
        result = Result(check, gates, "PASS", "gradient_accumulation_steps", seen, want, incident,
                        f"{path.name} takes it from the training config (auto)")
    else:
        result = ctx.expect(check, gates, "training.gradient_accumulation_steps", seen, want,
                            want is not None and same(seen, want), incident, f"{path.name} says {seen}")
    result.reads = ("compute.deepspeed_config",)  # a file it approved: the launch must use it (the trace)
    return result


@static
@training_only(1)
def generation_batch(ctx: Context) -> Result:
    check, gates = "generation-batch", (1,)
    if not_grpo(ctx, check, gates):
        return not_grpo(ctx, check, gates)
    t = ctx.cfg.training
    seen, g = t.generation_batch_size, t.num_generations
    ok = seen is not None and bool(g) and seen % g == 0
    result = ctx.expect(check, gates, "training.generation_batch_size", seen,
                        f"set, a multiple of num_generations ({g})", ok,
                        "TRL derives it silently, and a size that does not divide into groups "
                        "splits a GRPO group across batches")
    result.reads = ("training.num_generations",)
    return result


@static
def loss_and_schedule(ctx: Context) -> list[Result]:
    if not ctx.training:
        return [Result(n, (1,), "SKIP", detail="not a training config")
                for n in ("loss-type", "lr-scheduler")]
    out = []
    for check, key in (("loss-type", "training.loss_type"),
                       ("lr-scheduler", "training.lr_scheduler_type")):
        if check == "loss-type" and not_grpo(ctx, check, (1,)):
            out.append(not_grpo(ctx, check, (1,)))
            continue
        seen, default = get(ctx.cfg, key), TRL_DEFAULTS[key]
        out.append(ctx.expect(check, (1,), key, seen, f"set explicitly, not TRL's default {default!r}",
                              seen is not None and seen != default,
                              "TRL's defaults (DAPO-style loss, linear decay) are not the paper's"))
    return out


@static
@training_only(1)
def save_steps(ctx: Context) -> Result:
    check, gates = "save-steps", (1,)
    t, c = ctx.cfg.training, ctx.cfg.compute
    incident = "a crash lost every step since a checkpoint hours old"
    if t.save_steps is None or t.max_steps is None or t.save_steps < 1:
        return ctx.expect(check, gates, "training.save_steps", t.save_steps, "set, >= 1", False, incident)
    if t.save_steps > t.max_steps:
        return ctx.expect(check, gates, "training.save_steps", t.save_steps,
                          f"<= max_steps ({t.max_steps})", False, incident, "no checkpoint before the end")
    if c.step_minutes is None:
        return Result(check, gates, "WARN", "training.save_steps", t.save_steps, None, incident,
                      "step time unmeasured: set compute.step_minutes (from a previous run's log) "
                      "to check the checkpoint interval")
    gap = t.save_steps * c.step_minutes
    return ctx.expect(check, gates, "training.save_steps", t.save_steps,
                      f"<= {math.floor(c.max_checkpoint_gap_minutes / c.step_minutes)} "
                      f"({c.step_minutes:g} min/step, at most {c.max_checkpoint_gap_minutes:g} min "
                      "between checkpoints)", gap <= c.max_checkpoint_gap_minutes, incident,
                      f"{gap:g} min between checkpoints")


@static
@training_only(1)
def save_total_limit(ctx: Context) -> Result:
    check, gates = "save-total-limit", (1,)
    t = ctx.cfg.training
    incident = "save_total_limit rotation deleted the checkpoints a sweep needed"
    if t.save_total_limit is None:
        return Result(check, gates, "PASS", "training.save_total_limit", None, "every checkpoint kept",
                      incident, "no rotation: every checkpoint is kept")
    if not t.save_steps or t.max_steps is None:
        return Result(check, gates, "FAIL", "training.save_total_limit", t.save_total_limit, None,
                      incident, "save_steps and max_steps must be set to check it")
    written = t.max_steps // t.save_steps
    return ctx.expect(check, gates, "training.save_total_limit", t.save_total_limit,
                      f">= {written} (max_steps {t.max_steps} / save_steps {t.save_steps})",
                      t.save_total_limit >= written, incident)


@static
def resume(ctx: Context) -> Result:
    check, gates = "resume-save-steps", (1,)
    value = ctx.cfg.training.resume_from_checkpoint
    if not value:
        return Result(check, gates, "SKIP", detail="not a resume")
    incident = "a resumed run silently changed its checkpoint cadence"
    state_file = Path(value).expanduser() / "trainer_state.json"  # an output: relative to cwd
    try:
        saved = json.loads(state_file.read_text(encoding="utf-8")).get("save_steps")
    except (OSError, ValueError) as exc:
        return Result(check, gates, "FAIL", "training.resume_from_checkpoint", str(state_file),
                      "a checkpoint with trainer_state.json", incident, f"cannot read it: {exc}")
    want = ctx.cfg.training.save_steps
    return ctx.expect(check, gates, "training.save_steps", want, saved,
                      saved is not None and want is not None and same(saved, want), incident,
                      f"the checkpoint was saved with save_steps {saved}")


@static
def executor_reasoning(ctx: Context) -> list[Result]:
    names = ("executor-reasoning", "executor-max-tokens")
    if not ctx.llm_executor:
        return [Result(n, (1,), "SKIP", detail="the heuristic executor has no model") for n in names]
    e = ctx.cfg.executor
    on = e.reasoning_effort not in (None, "none")
    reasoning = ctx.expect(names[0], (1,), "executor.reasoning_effort", e.reasoning_effort,
                           "on (hf, vllm), low, medium or high (reasoning on, as the paper)", on,
                           "an executor without reasoning is a weaker executor than the paper's")
    if e.decoding == "admissible":
        return [reasoning, Result(names[1], (1,), "SKIP", "executor.max_tokens", e.max_tokens, None,
                                  detail="executor.decoding admissible generates nothing: no reply to cut off")]
    return [
        reasoning,
        ctx.expect(names[1], (1,), "executor.max_tokens", e.max_tokens,
                   f">= {MIN_REASONING_TOKENS}" if on else "a value (any)",
                   e.max_tokens is not None and (not on or e.max_tokens >= MIN_REASONING_TOKENS),
                   "reasoning cut off mid-thought became unparseable actions"),
    ]


def _decoding_refused(cfg, section) -> str | None:
    """Why the model executor this config plays cannot decode as `section` says (its env's, and
    the environment its trainer's rollouts play: the selector's play slates), or None."""
    played = rollout_environment(cfg)
    domains = [environment(cfg)] + ([played] if played.name != cfg.env.name else [])
    for domain in domains:
        plays = decodings(domain.model_executor)
        if decoding_of(section) not in plays:
            return (f"executor.decoding {decoding_of(section)}: the {domain.name} environment's executor "
                    f"({domain.model_executor.__name__}) plays only {', '.join(plays)}; set executor.decoding "
                    f"{plays[0]}")
    return None


@static
def decoding(ctx: Context) -> list[Result]:
    """Every model backend this config uses samples with settings the config chose: left unset,
    the server's defaults apply (vLLM: T 1.0, top_p 1, no top_k), which no model card recommends."""
    cfg, out = ctx.cfg, []
    sections = [("executor", cfg.executor, ctx.llm_executor)]
    sections.append(("judge", cfg.judge, judge_used(cfg)))
    learns = any(a == "closed_loop" or str(a).startswith("curator:") for a in cfg.eval.arms)
    sections.append(("curator", cfg.curator, cfg.curator.backend != NO_MODEL and learns))
    for name, section, used in sections:
        check = f"decoding-{name}"
        if not used:
            out.append(Result(check, (1,), "SKIP", detail=f"no model {name} in this run"))
            continue
        if name == "executor" and (refused := _decoding_refused(ctx.cfg, section)):
            out.append(Result(check, (1,), "FAIL", f"{name}.decoding", decoding_of(section),
                              "a decoding its executor plays", "a launch that stopped at its first game", refused))
            continue
        if decoding_of(section) == "admissible":
            out.append(Result(check, (1,), "PASS", f"{name}.decoding", "admissible", "chosen by the config",
                              detail=f"{name}.decoding admissible samples nothing: the most likely admissible action "
                                     f"is taken, by {name}.likelihood {section.likelihood}",
                              reads=(f"{name}.likelihood",)))
            continue
        unset = [k for k in DECODING if getattr(section, k) is None]
        seen = {k: getattr(section, k) for k in DECODING}
        reads = (f"{name}.top_p", f"{name}.top_k")
        if len(unset) == len(DECODING):
            out.append(Result(check, (1,), "WARN", f"{name}.temperature", None, "set (the model card's)",
                              f"the {name} sampled with {_sampler_defaults(section.backend, 'the server defaults')}",
                              f"{name}.temperature, top_p and top_k are unset: the {section.backend} backend samples "
                              f"with {_sampler_defaults(section.backend, 'its defaults')}; set the model card's",
                              reads=reads))
        else:
            out.append(Result(check, (1,), "PASS", f"{name}.temperature", seen, "set",
                              detail=f"{section.backend} samples with {seen}"
                              + (f" ({', '.join(unset)} at the server's default)" if unset else ""), reads=reads))
    return out


@static
def error_budget(ctx: Context) -> Result:
    seen = ctx.cfg.eval.max_error_rate
    return ctx.expect("error-budget", (2,), "eval.max_error_rate", seen, f"<= {MAX_ERROR_RATE}",
                      seen <= MAX_ERROR_RATE,
                      "an API outage scored as failures became the most significant result")


@static
def control(ctx: Context) -> list[Result]:
    c = ctx.cfg.eval.control
    incident = "a baseline measured in May was reused for ten weeks"
    return [
        Result("control", (4,), "PASS", "eval.control.arm", c.arm, "an arm of this run", incident,
               "the control is measured in the same run, on the same games and executor"),
        ctx.expect("control-age", (4,), "eval.control.max_age_days", c.max_age_days,
                   f"<= {MAX_CONTROL_AGE_DAYS:g}", c.max_age_days <= MAX_CONTROL_AGE_DAYS, incident),
    ]


@static
def mde(ctx: Context) -> Result:
    check, gates = "mde", (5,)
    if ctx.command == "sleep night":  # its held-out tasks are mined tonight: its own gate gives the MDE at their n
        return Result(check, gates, "SKIP", detail="a sleep night's validation tasks are mined when it runs, not "
                      "env.n_games: the night's gate reports its test at the n it mined")
    e, n = ctx.cfg.experiment, ctx.cfg.env.n_games
    d = e.expected_discordance or ASSUMED_DISCORDANCE
    basis = (f"discordant share {d:g} from experiment.expected_discordance"
             if e.expected_discordance else f"assumed discordant share {ASSUMED_DISCORDANCE:g}; "
             "set experiment.expected_discordance from a pilot")
    planned = stats.mde(n, d, ctx.cfg.eval.alpha, ctx.cfg.eval.power)
    incident = "an improvement claimed below what the sample could detect"
    values = {"mde": planned, "n": n, "discordance": d, "discordance_assumed": not e.expected_discordance,
              "alpha": ctx.cfg.eval.alpha, "power": ctx.cfg.eval.power, "expected_effect": e.expected_effect,
              "trials": ctx.cfg.eval.trials}
    if ctx.cfg.eval.trials > 1:  # the units are games: trials average within one, they never add units
        basis += (f"; eval.trials {ctx.cfg.eval.trials}: the paired tests are over the {n} games, not "
                  f"{n * ctx.cfg.eval.trials} plays, and the plan is one trial a game's, an upper bound "
                  "(a game's mean over trials varies no more than one play)")
    if e.expected_effect is None:
        return Result(check, gates, "WARN", "experiment.expected_effect", None, "<= MDE", incident,
                      f"the hypothesis claims no effect size; at n={n} the planned MDE (before the run) at "
                      f"{ctx.cfg.eval.power:.0%} power is {100 * planned:.1f} pts ({basis})", values=values)
    needed = stats.n_for_effect(e.expected_effect, d, ctx.cfg.eval.alpha, ctx.cfg.eval.power)
    values["n_needed"] = needed
    detail = (f"planned MDE (before the run) at n={n}: {100 * planned:.1f} pts vs the claimed "
              f"{100 * e.expected_effect:.1f} pts ({basis})")
    if planned <= e.expected_effect:
        return Result(check, gates, "PASS", "env.n_games", n, f">= {needed}", incident, detail, values=values)
    return Result(check, gates, "WARN", "env.n_games", n, f">= {needed}", incident,
                  f"{detail}; {needed} paired games are needed", values=values)


@static
def trials_sample(ctx: Context) -> Result:
    """eval.trials above 1 repeats each game with its own sampling seed: an executor that samples
    nothing (no model, greedy, admissible decoding) plays every trial alike, so the repeats cost
    time and add no information (each game's trials all agree)."""
    check, gates, k, e = "trials-sample", (5,), ctx.cfg.eval.trials, ctx.cfg.executor
    if k == 1:
        return Result(check, gates, "SKIP", detail="eval.trials 1: one play a game")
    alike = ("the no-model executor is deterministic" if e.backend == NO_MODEL else
             "executor.decoding admissible samples nothing" if decoding_of(e) == "admissible" else
             "executor.temperature 0 is greedy" if e.temperature == 0 else None)
    if alike:
        return Result(check, gates, "WARN", "eval.trials", k, "1 for an executor that samples nothing",
                      "repeats that cost time and add nothing", f"{alike}: its {k} trials of a game play alike")
    seeded = (f"each play seeded from its trial's seed ({e.backend} takes one)" if BACKENDS[e.backend].seeds else
              f"{e.backend} takes no per-play seed: the plays are independent draws, not reproducible per trial")
    return Result(check, gates, "PASS", "eval.trials", k, "an executor that samples",
                  detail=f"{k} trials a game; {seeded}")


@static
def fix(ctx: Context) -> Result:
    check, gates = "fix", (6,)
    e = ctx.cfg.experiment
    incident = "a fix that did not move the number was believed anyway"
    if e.fixes_failure is None:
        if re.search(r"\bfix", f"{e.name} {e.hypothesis}", re.IGNORECASE):
            return Result(check, gates, "WARN", "experiment.fixes_failure", None,
                          "the failure id this run fixes", incident,
                          "the experiment reads like a fix but declares none; set "
                          "experiment.fixes_failure, fix_metric and before_run")
        return Result(check, gates, "SKIP", detail="not declared as a fix")
    problems = []
    if e.fix_metric is None:
        problems.append("experiment.fix_metric unset")
    if e.before_run is None:
        problems.append("experiment.before_run unset")
    if ctx.ledger is None:
        problems.append("no ledger to look the failure and before-run up in")
    else:
        try:
            ctx.ledger.failure(e.fixes_failure)
        except LedgerError:
            problems.append(f"failure #{e.fixes_failure} is not in the ledger")
        if e.before_run is not None:
            try:
                run = ctx.ledger.run(e.before_run)
                if not any(ev["valid"] for ev in run["evals"]):
                    problems.append(f"run #{e.before_run} has no valid eval")
            except LedgerError:
                problems.append(f"run #{e.before_run} is not in the ledger")
    return Result(check, gates, "FAIL" if problems else "PASS", "experiment.fixes_failure",
                  e.fixes_failure, "a ledger failure, a metric and a measured before-run", incident,
                  "; ".join(problems) or f"fixes failure #{e.fixes_failure}, moves {e.fix_metric}, "
                  f"before-run #{e.before_run}")


@static
def watchdog(ctx: Context) -> Result:
    on = ctx.cfg.compute.watchdog
    return ctx.expect("watchdog", (7,), "compute.watchdog", on, True, on is True,
                      "8 GPUs idle for days behind a job whose logs looked healthy")


# What a launch imports, by what the config asks for: a missing extra is a FAIL before anything
# starts (not a 51-line ImportError after the gates passed), with the line that installs it.
# Each backend's modules and install line are its entry in skillos/registry.py.
# Read from the registry at each check, so a backend a plug-in adds is checked too.
def launch_extras() -> dict:
    return {
        "train": (("torch", "transformers", "trl", "peft", "datasets", "accelerate"),
                  TORCH_FIRST + "pip install 'skillos[train]'"),
        **{b.name: (b.modules, b.install) for b in BACKENDS if b.modules},
        **{m.name: (m.modules, m.install) for m in COMPUTE if m.modules},  # compute backends' own (ray)
    }


@static
def extras(ctx: Context) -> list[Result]:
    import importlib.util

    c = ctx.cfg
    compute = compute_of(c)
    if compute.own_image:  # the launch runs in its own image, which installs its own
        return [Result("extras", (1,), "SKIP", detail=f"compute.backend {compute.name} installs its own image")]
    known = launch_extras()
    needed = {s.backend for s in (c.executor, c.curator, c.judge, c.optimize.optimizer)} & set(known)
    if ctx.training:
        needed.add("train")
    if compute.modules:
        needed.add(compute.name)
    results = []
    for extra in sorted(needed):
        modules, line = known[extra]
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        key = {"train": "training", "ray": "compute.backend ray"}.get(extra, f"backend {extra}")
        if missing:
            # vLLM is installed by hand on the GPU machine a plan is carried to: a warning here
            status = "WARN" if extra in BACKENDS and BACKENDS[extra].gpu_only else "FAIL"
            results.append(Result("extras", (1,), status, key, f"missing {', '.join(missing)}",
                                  "installed", "a launch that died on an ImportError after the gates "
                                  f"passed", f"install with: {line}", machine=True,
                                  todo={"owner": "agent", "command": line, "time": None}))
        else:
            results.append(Result("extras", (1,), "PASS", key, "installed", "installed"))
    return results or [Result("extras", (1,), "SKIP", detail="nothing beyond the base install is needed")]
@machine
def data_present(ctx: Context) -> list[Result]:
    """The data each split's tasks come from is on this machine (ALFWorld's official games, a
    reasoning dataset, its grader): asked of the environment without loading a task, so `plan`
    says it for free, before the dry-run or the launch."""

    env = environment(ctx.cfg)
    results = []
    for role, (split, n) in game_sets(ctx.cfg).items():
        if not n:
            continue
        missing = env.data_missing(ctx.cfg, split)
        if missing and ctx.command:  # a launch: the user's input, one line and exit 2, like loading would
            raise SkillosError(missing)
        results.append(Result("data-present", (1,), "FAIL" if missing else "PASS", f"env ({role} games)", split,
                              "its data on this machine", "a launch that stopped at its first game for data "
                              "that was never downloaded", missing or "", machine=bool(missing),
                              todo={"owner": "agent", "command": missing, "time": None} if missing else None))
    return results or [Result("data-present", (1,), "SKIP", detail="no games are loaded")]


# -- SkillGate's frozen eval protocol (the selector's slate and credit: training/selector/checks.py) --
@static
def eval_protocol(ctx: Context) -> Result:
    check, gates, spec = "eval-protocol", (4,), ctx.cfg.skillgate.eval_spec
    if not spec:
        return Result(check, gates, "SKIP", detail="no frozen eval spec (skillgate.eval_spec)")
    load_spec(ctx.path(spec))  # a spec that does not pin everything is a one-line error
    return Result(check, gates, "PASS", "skillgate.eval_spec", spec, ", ".join(PINS))


@static
def divergences(ctx: Context) -> list[Result]:
    """Runs last: every declared departure must name a key some check read."""
    known = set(_flatten(Config().to_dict())) | set(DERIVED)
    known |= set(ctx.reference.values if ctx.reference else ())
    out = []
    for key in ctx.cfg.divergences:
        if key in ctx.used_divergences:
            continue
        if key not in known:
            out.append(Result("divergences", (1,), "FAIL", f"divergences.{key}", key, "a config key",
                              "a departure declared against nothing", "no such key"
                              + did_you_mean(key, known, list_allowed=False)))
        else:
            out.append(Result("divergences", (1,), "WARN", f"divergences.{key}",
                              ctx.cfg.divergences[key]["value"], None,
                              "a stale declaration hides the next real departure",
                              "declared, but the config does not depart there (or no check reads it)"))
    return out


def _flatten(data: dict, prefix: str = ""):
    for key, value in data.items():
        if isinstance(value, dict) and value and key not in ("divergences",):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"
