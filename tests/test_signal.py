"""Every training run says when it learned nothing (training/common/signal.py): each step's learning
signal from TRL's own log keys, an end-of-run verdict "N of M steps had no learning signal", and
at GPU scale an abort after training.max_signal_free_steps signal-free steps in a row, recorded
in the ledger."""

import pytest

from conftest import ROOT
from skillos import config
from skillos.errors import SkillosError
from skillos.ledger import Ledger
from skillos.training.common import signal

PAPER = ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"
SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"

FLAT = {"loss": 0.0, "grad_norm": 0.0, "reward_std": 0.0, "frac_reward_zero_std": 1.0}  # TRL's log of a dead step
LIVE = {"loss": 0.1, "grad_norm": 0.42, "reward_std": 0.5, "frac_reward_zero_std": 0.25}


def test_a_step_has_a_signal_unless_every_group_was_alike_or_its_gradient_zero():
    assert signal.step_signal(LIVE) is True
    assert signal.step_signal(FLAT) is False
    assert signal.step_signal({**LIVE, "frac_reward_zero_std": 1.0}) is False  # every advantage 0
    assert signal.step_signal({**LIVE, "grad_norm": 0.0}) is False
    assert signal.step_signal({"loss": 0.3, "grad_norm": 1.2}) is True  # SFT / DPO: no rewards, a gradient
    assert signal.step_signal({"loss": 0.3}) is None  # unmeasured: never counted either way
    # the selector's second stream: every outcome alike, yet its selection spans carried credit
    assert signal.step_signal({**FLAT, "grad_norm": 0.2, "selection/advantage_nonzero": 0.5}) is True
    assert signal.step_signal({**FLAT, "grad_norm": 0.2, "selection/advantage_nonzero": 0.0}) is False
    assert signal.step_signal({**FLAT, "selection/advantage_nonzero": 0.5}) is False  # no gradient: nothing moved


def test_the_run_ends_saying_how_many_steps_had_no_signal():
    lines = []
    watch = signal.LearningSignal(lines.append)
    for step, logs in enumerate((FLAT, LIVE, FLAT, {"loss": 0.2}, {"train_runtime": 3.0}), 1):
        assert watch.log(step, logs) is False  # no abort rule on the CPU
    assert [line.split(":")[1] for line in lines] == [" step 1", " step 2", " step 3", " step 4"]
    assert "NONE (1 in a row)" in lines[0] and "grad_norm 0" in lines[0] and "yes" in lines[1]
    verdict = watch.verdict()
    assert (verdict["steps"], verdict["signal_free"], verdict["unmeasured"]) == (4, 2, 1)
    assert verdict["line"] == ("learning signal: 2 of 4 steps had no learning signal (1 unmeasured); "
                               "grad_norm > 0 in 1 of 3")
    assert (verdict["grad_nonzero"], verdict["grad_logged"]) == (1, 3)
    dead = signal.LearningSignal(lines.append)
    dead.log(1, FLAT)
    assert dead.verdict()["line"].endswith("the weights did not move: this run learned nothing")
    # every group alike, yet a gradient (the KL term pulling toward the reference): nothing learned,
    # and not said to be "did not move"
    anchored = signal.LearningSignal(lines.append)
    anchored.log(1, {**FLAT, "grad_norm": 0.3})
    line = anchored.verdict()["line"]
    assert "grad_norm > 0 in 1 of 1" in line and line.endswith("no step had a reward to learn from: this run "
                                                               "learned nothing")
    unlogged = signal.LearningSignal(lines.append)
    unlogged.log(1, {"loss": 0.1, "frac_reward_zero_std": 0.5})
    assert unlogged.verdict()["grad_nonzero"] is None and "grad_norm" not in unlogged.verdict()["line"]
    assert "unmeasured" in signal.LearningSignal(lines.append).verdict()["line"]


def test_a_gpu_launch_aborts_after_k_signal_free_steps_and_the_ledger_says_why(skillos_home):
    assert signal.for_run(config.load(SMOKE), print).abort_after is None  # the CPU: it only says so
    paper = config.load(PAPER)
    assert signal.for_run(paper, print).abort_after == paper.training.max_signal_free_steps == 10
    watch = signal.for_run(config.with_sets(paper, ["training.max_signal_free_steps=3"]), lambda _line: None)
    stops = [watch.log(step, logs) for step, logs in enumerate((FLAT, FLAT, LIVE, FLAT, FLAT, FLAT, FLAT), 1)]
    assert stops == [False, False, False, False, False, True, False]  # 3 in a row, once
    assert "training aborted at step 6: 3 consecutive steps had no learning signal" in watch.aborted
    with Ledger(skillos_home / "ledger.db") as ledger:
        experiment = ledger.add_experiment("paper")
        run = ledger.start_run(experiment, "train", {})
        with pytest.raises(SkillosError, match="training aborted at step 6") as refused:
            signal.conclude(watch, ledger, run, lambda _line: None)
        assert "\n" not in str(refused.value)
        (failure,) = ledger.failures()
        assert failure["category"] == "wasted-compute" and "no learning signal" in failure["what"]
        assert failure["run_id"] == run and ledger.row("runs", run)["status"] == "aborted"
    assert config.load(PAPER, ["training.max_signal_free_steps=null"]).training.max_signal_free_steps is None
    with pytest.raises(SkillosError, match="training.max_signal_free_steps"):
        config.load(PAPER, ["training.max_signal_free_steps=0"])
    assert config.load(PAPER, ["training.max_signal_free_steps=3"]).hash() == paper.hash()  # how it runs, not what


def test_the_trainer_feeds_the_watch_and_stops_when_it_asks():
    """The callback every trainer adds: it reads each log on every process and stops them together."""
    import types

    watch = signal.LearningSignal(lambda _line: None, abort_after=1)
    callback = watch.callback()
    control = types.SimpleNamespace(should_training_stop=False)
    state = types.SimpleNamespace(global_step=1, is_world_process_zero=False)
    callback.on_log(None, state, control, logs=LIVE)
    assert control.should_training_stop is False
    callback.on_log(None, state, control, logs=FLAT)
    assert control.should_training_stop is True and watch.aborted
