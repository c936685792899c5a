"""Whether a training run learned anything, step by step, from TRL's own log keys.

A GRPO step has no learning signal when every group's rollouts got the same reward (TRL logs
`frac_reward_zero_std` = 1: every advantage is 0) and no second credit stream (STREAMS: the
selector's selection spans) gave a rollout an advantage, or when its gradient is exactly zero
(`grad_norm` = 0); a supervised step (SFT, DPO) when its gradient is zero. Such a step leaves the
weights where they were. The reference reproduction trained for days on steps like these. Every
trainer's run (training/common/grpo.fit) prints a line per step with the numbers it read, ends with
"N of M steps had no learning signal", and carries that verdict in its summary; a step whose log
has neither key is unmeasured, never counted either way.

At GPU scale (skillos.devices.gpu_launch) a launch aborts after `training.max_signal_free_steps`
consecutive signal-free steps: the trainer stops at the end of that step, the run ends as
`aborted` with a ledger failure saying why, and the launch exits with a one-line error. On the
CPU (smoke runs, canaries) it only says so.
"""

from __future__ import annotations
from skillos.devices import gpu_launch
from skillos.errors import SkillosError

KEYS = ("frac_reward_zero_std", "reward_std", "grad_norm")  # as TRL and transformers log them
# A trainer's credit stream beside the reward's, logged as the share of rollouts it gave a non-zero
# advantage: SkillGate's selection spans learn even when every outcome in a group is alike.
STREAMS = ("selection/advantage_nonzero",)


def step_signal(logs: dict) -> bool | None:
    """True: the step moved the weights for a reason; False: it could not (a zero gradient, or
    every group's rewards alike and no other credit stream carrying anything); None: its log
    carries neither key (unmeasured)."""
    frac, grad = logs.get("frac_reward_zero_std"), logs.get("grad_norm")
    if frac is None and grad is None:
        return None
    if grad is not None and float(grad) == 0.0:
        return False
    streams = [float(logs[k]) for k in STREAMS if logs.get(k) is not None]
    return frac is None or float(frac) < 1.0 or any(v > 0 for v in streams)


class LearningSignal:
    """Counts the steps with and without a learning signal as the trainer logs them; with
    `abort_after`, asks the trainer to stop after that many signal-free steps in a row."""

    def __init__(self, echo, abort_after: int | None = None):
        self.echo, self.abort_after = echo, abort_after
        self.steps: list[dict] = []
        self.in_a_row = 0
        self.aborted: str | None = None

    def log(self, step: int, logs: dict) -> bool:
        """Read one step's log; True when the trainer should stop (the abort rule was met)."""
        if not any(key in logs for key in (*KEYS, "loss")):
            return False  # not a training step's log (the run's summary, an evaluation)
        signal = step_signal(logs)
        self.steps.append({"step": step, "signal": signal, **{k: logs.get(k) for k in KEYS}})
        self.in_a_row = self.in_a_row + 1 if signal is False else 0
        shown = ", ".join(f"{k} {_num(logs.get(k))}" for k in (*KEYS, *(k for k in STREAMS if k in logs)))
        state = {True: "yes", False: f"NONE ({self.in_a_row} in a row)", None: "unmeasured"}[signal]
        self.echo(f"learning signal: step {step}: {state} ({shown})")
        if self.abort_after is not None and self.in_a_row >= self.abort_after and self.aborted is None:
            self.aborted = (f"training aborted at step {step}: {self.in_a_row} consecutive steps had no learning "
                            "signal (every group's rewards alike, or a zero gradient; "
                            f"training.max_signal_free_steps {self.abort_after})")
            self.echo(self.aborted)
            return True
        return False

    def verdict(self) -> dict:
        """{steps, signal_free, unmeasured, line}: 'N of M steps had no learning signal'."""
        m = len(self.steps)
        none = sum(s["signal"] is False for s in self.steps)
        unmeasured = sum(s["signal"] is None for s in self.steps)
        norms = [float(s["grad_norm"]) for s in self.steps if s["grad_norm"] is not None]
        moved = sum(n > 0 for n in norms) if norms else None  # None: no step logged its gradient
        if not m:
            line = "learning signal: unmeasured (no training step logged frac_reward_zero_std or grad_norm)"
        else:
            line = (f"learning signal: {none} of {m} steps had no learning signal"
                    + (f" ({unmeasured} unmeasured)" if unmeasured else "")
                    + ("" if moved is None else f"; grad_norm > 0 in {moved} of {len(norms)}"))
            if none == m:  # a KL term alone can move the weights, toward the start: nothing learned
                line += ("; the weights did not move: this run learned nothing" if moved == 0
                         else "; no step had a reward to learn from: this run learned nothing")
        return {"steps": m, "signal_free": none, "unmeasured": unmeasured, "grad_nonzero": moved,
                "grad_logged": len(norms), "aborted": self.aborted, "line": line}

    def callback(self):
        """The transformers callback feeding `log`; built on call (transformers loads with training)."""
        from transformers import TrainerCallback

        owner = self

        class _Signal(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kwargs):
                # every process applies the rule (their logs carry the same reduced numbers), so
                # they stop together; only the main one was given an echo that prints
                if logs and owner.log(state.global_step, logs):
                    control.should_training_stop = True

        return _Signal()


def _num(value) -> str:
    return "unlogged" if value is None else f"{float(value):.3g}"


def for_run(cfg, echo, main: bool = True) -> LearningSignal:
    """The watch of one training run: it aborts after training.max_signal_free_steps at GPU scale
    only; `main`: this process prints (under accelerate, one does)."""
    return LearningSignal(echo if main else (lambda _line: None),
                          cfg.training.max_signal_free_steps if gpu_launch(cfg) else None)


def conclude(watch: LearningSignal, ledger, run_id, echo) -> dict:
    """After the trainer returned: print the verdict; an aborted run is recorded (a ledger
    failure, the run ended as aborted) and raised as a one-line error. Returns the verdict."""
    verdict = watch.verdict()
    echo(verdict["line"])
    if watch.aborted:
        if ledger is not None and run_id is not None:
            experiment = ledger.row("runs", run_id)["experiment_id"]
            ledger.add_failure(watch.aborted, "wasted-compute", (), kind="operational",
                               detected_by="toolkit", gate="6", experiment_id=experiment, run_id=run_id)
            ledger.end_experiment_run(run_id, "aborted", watch.aborted[:300])
        raise SkillosError(f"{watch.aborted}; its reward carries nothing to learn from: fix the recipe, or raise "
                           "training.max_signal_free_steps")
    return verdict
