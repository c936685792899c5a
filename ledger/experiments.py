"""What an experiment writes to the ledger: the experiment of a config (`record_experiment`,
shared by eval, optimize, training and the gates) and an eval's runs, evals and failures
(`EvalRecord`). Here, not in the launchers, so every launcher names an experiment the same way.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from skillos.config.schema import Config


def success_metric(cfg: Config) -> str:
    """What an experiment of this config measures (recorded with it, and in its plan)."""
    return f"success rate vs {cfg.eval.control.arm} (paired, exact McNemar)"


def record_experiment(ledger, cfg: Config) -> int:
    """The ledger experiment of a config (same name and config hash: the same experiment)."""
    return ledger.find_or_add_experiment(
        cfg.experiment.name, cfg.experiment_hash(), hypothesis=cfg.experiment.hypothesis,
        success_metric=success_metric(cfg))


class EvalRecord:
    """What an eval writes to the ledger: the experiment, one run per arm, one eval per run,
    and an operational failure if the eval crashed. No ledger: records nothing."""

    def __init__(self, ledger, cfg: Config, out: Path, resumed: bool = False):
        self.ledger, self.runs = ledger, {}
        if ledger is None:
            return
        self.experiment = record_experiment(ledger, cfg)
        ledger.correct("experiments", self.experiment, "status", "eval started", value="running")
        output = str(out.resolve())
        if resumed:  # the killed runs of this folder end here, instead of "running" forever
            for row in ledger.rows("runs"):
                if row["experiment_id"] == self.experiment and row["ended_at"] is None and \
                        json.loads(row["config_json"] or "{}").get("output") == output:
                    ledger.end_run(row["id"], "interrupted", f"killed; resumed from {output}")
        snapshot = {**cfg.to_dict(), "output": output}  # where the run's rows are
        for arm in cfg.eval.arms:
            self.runs[arm] = ledger.start_run(self.experiment, arm, snapshot, cfg.env.seed,
                                              executor_fingerprint(cfg))

    def interrupted(self, exc: BaseException | None = None) -> None:
        """Stopped by a person (Ctrl-C, `kill PID`): the runs end as interrupted; not a failure."""
        if self.ledger is None:
            return
        why = "stopped by " + (f"{type(exc).__name__} {exc}".strip() if exc is not None else "KeyboardInterrupt")
        for run in self.runs.values():
            self.ledger.end_run(run, "interrupted", why)
        self.ledger.correct("experiments", self.experiment, "status", "interrupted",
                            value="interrupted")

    def crashed(self, exc: BaseException) -> None:
        if self.ledger is None:
            return
        what = f"eval crashed: {type(exc).__name__}: {exc}"[:500]
        for run in self.runs.values():
            self.ledger.end_run(run, "crashed", what)
        self.ledger.correct("experiments", self.experiment, "status", what, value="crashed")
        self.ledger.add_failure(what, "wasted-compute", kind="operational", detected_by="toolkit",
                                experiment_id=self.experiment, run_id=next(iter(self.runs.values())))

    def finished(self, result: dict, jsonl: Path) -> None:
        if self.ledger is None:
            return
        digest = hashlib.sha256(jsonl.read_bytes()).hexdigest()
        for arm, run in self.runs.items():
            self.ledger.add_eval(run, arm, result["arms"][arm], str(jsonl.resolve()), digest)
            self.ledger.end_run(run, "finished", tokens=(result.get("api_cost") or {}).get("measured", {}).get(arm))
            self._curator_failures(arm, run, result)
        self.ledger.correct("experiments", self.experiment, "status", "eval finished",
                            value="measured")
        result["ledger"] = {"path": str(self.ledger.path), "experiment_id": self.experiment,
                            "run_ids": self.runs}

    def _curator_failures(self, arm: str, run: int, result: dict) -> None:
        """Failed curator calls and refused operations of an arm, as one ledger failure: the
        curated repo is what a curator that failed this often produced."""
        counts = [c for c in (result.get("train_curation", {}).get(arm), result["arms"][arm]) if c]
        calls = sum(c["curator_calls"] for c in counts)
        failed = sum(c["curator_failed_calls"] for c in counts)
        refused = sum(c["curator_refused_ops"] for c in counts)
        ops = refused + sum(c["curator_applied_ops"] for c in counts)
        if failed or refused:
            self.ledger.add_failure(
                f"arm {arm}: {failed} of {calls} curator calls failed, {refused} of {ops} curator "
                "operations refused", "near-miss", kind="operational", detected_by="toolkit",
                experiment_id=self.experiment, run_id=run)


def executor_fingerprint(cfg: Config) -> str:
    """What makes two runs' executors the same executor: a control only controls for its own."""
    e = cfg.executor
    return (f"executor={e.backend} model={e.model} reasoning={e.reasoning_effort} "
            f"max_tokens={e.max_tokens} history={e.history_length} max_steps={cfg.env.max_steps} "
            f"top_k={cfg.retrieval.top_k}")
