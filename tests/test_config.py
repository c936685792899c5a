import pytest

from conftest import ROOT, run_cli
from skillos import config
from skillos.errors import ConfigError


def test_quickstart_config_is_valid_and_sized_for_the_claim():
    cfg = config.load(ROOT / "evals" / "configs" / "quickstart.yaml")
    assert cfg.env.n_games >= 60 and cfg.env.max_steps == 30
    assert cfg.eval.arms == ["no_memory", "closed_loop"] and cfg.eval.control.arm == "no_memory"
    assert cfg.retrieval.top_k == 5


@pytest.mark.parametrize("data, fragment", [
    ({"env": {"n_gmaes": 3}}, "env.n_gmaes: unknown key (did you mean 'n_games'?)"),
    ({"retreival": {}}, "retreival: unknown key (did you mean 'retrieval'?)"),
    ({"env": {"n_games": "many"}}, "env.n_games: expected int"),
    ({"env": {"n_games": True}}, "env.n_games: expected int"),
    ({"env": {"split": "test"}}, "env.split: 'test' is not one of"),
    ({"env": {"split": "train"}}, "held-out games must not be training games"),
    ({"eval": {"arms": ["no_memory", "closed_lop"]}}, "did you mean 'closed_loop'"),
    ({"eval": {"arms": ["closed_loop"]}}, "eval.control: 'no_memory' is not among eval.arms"),
    ({"eval": {"arms": ["no_memory", "static_repo"]}}, "needs a skill folder"),
    ({"executor": {"backend": "gpt"}}, "executor.backend: 'gpt' is not one of"),
    ({"env": []}, "env: expected a mapping"),
])
def test_bad_configs_get_one_clear_line(data, fragment):
    with pytest.raises(ConfigError) as info:
        config.from_dict(data)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_training_keys_use_trl_names_and_unset_is_none():
    cfg = config.from_dict({"training": {"learning_rate": 1e-6, "max_steps": 60},
                            "divergences": {"training.learning_rate": {"value": 1e-6, "reason": "x"}}})
    assert cfg.training.learning_rate == 1e-6 and cfg.training.loss_type is None
    assert cfg.training.is_set() and not config.Config().training.is_set()
    assert cfg.to_dict()["divergences"]["training.learning_rate"]["reason"] == "x"
    assert len(cfg.hash()) == 16 and cfg.hash() != config.Config().hash()


def test_control_is_a_mapping_or_an_arm_name():
    short = config.from_dict({"eval": {"control": "no_memory"}})
    long = config.from_dict({"eval": {"control": {"arm": "no_memory", "max_age_days": 3}}})
    assert short.eval.control.arm == long.eval.control.arm == "no_memory"
    assert short.eval.control.max_age_days == 7 and long.eval.control.max_age_days == 3


@pytest.mark.parametrize("data, fragment", [
    ({"training": {"lr": 1e-6}}, "training.lr: unknown key"),
    ({"training": {"learning_rate": "fast"}}, "training.learning_rate: expected float or null"),
    ({"training": {"max_steps": 2.5}}, "training.max_steps: expected int or null"),
    ({"eval": {"max_error_rate": 1.5}}, "eval.max_error_rate: a share in [0, 1)"),
    ({"divergences": {"training.beta": 0.0}}, "divergences.training.beta: expected a mapping"),
    ({"divergences": {"training.beta": {"value": 0.0}}}, "needs a reason"),
    ({"compute": {"backend": "slurm"}}, "compute.backend: 'slurm' is not one of"),
    ({"env": {"max_steps": None}}, "env.max_steps: must be set, got null"),
])
def test_bad_gate_keys_get_one_clear_line(data, fragment):
    with pytest.raises(ConfigError) as info:
        config.from_dict(data)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_cli_eval_bad_config_is_one_line_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("env:\n  n_gmaes: 3\n")
    result = run_cli("eval", bad)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "did you mean 'n_games'" in result.stderr
    assert "Traceback" not in result.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("env: [unclosed\n")
    result = run_cli("eval", broken)
    assert result.returncode == 2 and "invalid YAML" in result.stderr
    result = run_cli("eval", tmp_path / "missing.yaml")
    assert result.returncode == 2 and "no such config file" in result.stderr
