"""A new method is a folder and registry entries, nothing else (docs/extending.md): a toy method
written outside skillos's source, registered in TRAINERS and METHODS, is validated as a config's
trainer, its own gate check runs with the gates' generic ones (another method's checks skip it), its
own trace resolver says where a key its trainer reads goes (another method's are not asked), and
`skillos train`'s dispatch reaches its trainer; no skillos module is edited."""

import json
import textwrap

import pytest

from conftest import ROOT
from skillos import api
from skillos.gates import core
from skillos.registry import METHODS, TRAINERS, Method, Trainer
from skillos.training import registry

TOY = {
    "__init__.py": '"""A toy method: one trainer that writes a file, one gate check."""\n',
    "trainer.py": '''
        """The toy trainer: writes what it was asked to train and returns the summary skillos expects."""
        import json
        from pathlib import Path

        from skillos.config.derived import training_output_dir


        def train(cfg, ledger, echo=print, **_):
            out = training_output_dir(cfg)
            out.mkdir(parents=True, exist_ok=True)
            (out / "toy.json").write_text(json.dumps({"steps": cfg.training.max_steps}))
            echo("toy: trained")
            return {"run_id": None, "output_dir": str(out), "checkpoints": [], "steps": []}


        def args_spec(cfg, cpu, out=None):
            return dict, {"max_steps": cfg.training.max_steps, "lambda_fc": cfg.reward.lambda_fc}
        ''',
    "checks.py": '''
        """The toy method's own gate check, in skillos.checking's words."""
        from skillos.checking import Context, Result, static


        @static
        def toy_ready(ctx: Context) -> Result:
            if ctx.cfg.skillgate.trainer != "toy":
                return Result("toy-ready", (1,), "SKIP", detail="not the toy trainer")
            return Result("toy-ready", (1,), "PASS", "training.max_steps", ctx.cfg.training.max_steps, "any",
                          detail="checked by the toy method's own module")
        ''',
    "trace.py": '''
        """Where the toy trainer takes the keys it reads its own way, in skillos.tracing's words."""
        from skillos.tracing import resolver, row


        @resolver(r"^reward\\.lambda_fc$")
        def toy_reward(t, key, value):
            return row(key, value, "the toy trainer's arguments", t.args()["lambda_fc"])
        ''',
}


def write_toy(folder, monkeypatch):
    package = folder / "toy_method"
    package.mkdir()
    for name, text in TOY.items():
        (package / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(folder))
    return package


def static_check_names() -> list:
    return [c.__name__ for c in core.checks("static")]


@pytest.fixture
def toy_method(tmp_path, monkeypatch):
    package = write_toy(tmp_path, monkeypatch)
    with TRAINERS.extended(Trainer("toy", "toy_method.trainer", args_spec="toy_method.trainer:args_spec",
                                   about="a toy method's trainer", plays_itself=True)), \
            METHODS.extended(Method("toy", "toy_method", about="a toy", trainers=("toy",), checks="toy_method.checks",
                                   trace="toy_method.trace")):
        yield package


def test_a_method_added_through_the_registry_alone_is_gated_and_trained(toy_method, tmp_path):
    config = ROOT / "training" / "configs" / "cpu-smoke.yaml"
    cfg = api.load(config, sets=["skillgate.trainer=toy", f"training.output_dir={tmp_path / 'out'}"])
    assert "toy_method.checks" in core.check_modules()
    report = api.check(cfg, partial=True)  # the static gates: the generic checks and the toy's own
    (row,) = [r for r in report.results if r.check == "toy-ready"]
    assert row.status == "PASS" and "toy method's own module" in row.detail
    assert {r.check: r.status for r in report.results}["skillgate-slate"] == "SKIP"  # the selector's, not the toy's
    lines = []
    summary = registry.train(cfg, None, echo=lines.append)  # what a launch calls once the gates passed
    assert json.loads((tmp_path / "out" / "toy.json").read_text()) == {"steps": cfg.training.max_steps}
    assert summary["output_dir"] == str(tmp_path / "out") and "toy: trained" in lines


def test_a_methods_checks_run_while_its_entry_is_listed_and_not_after(tmp_path, monkeypatch):
    write_toy(tmp_path, monkeypatch)
    assert "toy_ready" not in static_check_names()  # collected before: the registry is read again at each run
    with METHODS.extended(Method("toy", "toy_method", checks="toy_method.checks")):
        assert "toy_ready" in static_check_names()
    assert "toy_ready" not in static_check_names()


def test_a_method_name_already_registered_is_refused():
    from skillos.errors import SkillosError

    with pytest.raises(SkillosError, match="already a method"):
        with METHODS.extended(Method("curator", "x")):
            pass


@pytest.mark.parametrize("trainer, status", [("curator", "SKIP"), ("selector", "FAIL"), ("selector-bc", "FAIL")])
def test_a_methods_check_applies_to_its_own_trainers_even_outside_training(trainer, status):
    """The selector's slate check: a config naming a selector trainer needs a slate whether or not it
    trains (an eval config too), and a trainer of another method is not asked for one."""
    from skillos import gates

    cfg = api.load(ROOT / "evals" / "configs" / "quickstart.yaml", sets=[f"skillgate.trainer={trainer}"])
    try:
        results = api.check(cfg, partial=True).results
    except gates.GateRefused as refused:
        results = refused.report.results
    assert {r.check: r.status for r in results}["skillgate-slate"] == status


def test_a_methods_trace_resolves_the_keys_its_trainer_reads_and_no_other_methods_does(toy_method):
    """The toy's resolver says where reward.lambda_fc goes for the toy trainer; the curator's own
    resolvers (its groups, its reward weights) are asked for the curator's trainer only, and a key
    no resolver of the toy's method takes reaches no code under the toy trainer: checked but not applied."""
    from skillos.checking import Context
    from skillos.gates.trace import Tracer, _resolve

    config = ROOT / "training" / "configs" / "cpu-smoke.yaml"

    def traced(trainer, key):
        cfg = api.load(config, sets=[f"skillgate.trainer={trainer}", "reward.lambda_fc=0.7"])
        return _resolve(Tracer(Context(cfg)), key, eval(f"cfg.{key}"))

    toy = traced("toy", "reward.lambda_fc")
    assert (toy.consumer, toy.arrived, toy.applied) == ("the toy trainer's arguments", 0.7, True)
    curator = traced("curator", "reward.lambda_fc")
    assert curator.consumer.startswith("training/curator/trainer.RewardFunction") and curator.applied is True
    group = traced("toy", "training.group_size")
    assert (group.consumer, group.applied) == ("none", False) and "skillgate.trainer toy does not read it" in group.detail
    assert traced("curator", "training.group_size").consumer.startswith("CuratorEnv rows")
    assert traced("selector", "training.group_size").detail.startswith("skillgate.trainer selector plays one task")
