"""The quickstart's claim at its default size: closed_loop beats no_memory, and the report
itself calls it significant. Slow (generates 120 games on a cold cache): `pytest -m slow`."""

from importlib import resources

import pytest
import yaml

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")

from skillos import config  # noqa: E402
from skillos.evals.experiment import run_eval  # noqa: E402


@pytest.mark.slow
def test_default_quickstart_is_significant(tmp_path):
    text = (resources.files("skillos.evals") / "configs" / "quickstart.yaml").read_text()
    cfg = config.from_dict(yaml.safe_load(text))
    assert cfg.env.n_games >= 60
    report = run_eval(cfg, tmp_path / "run")
    arms = report["arms"]
    assert arms["no_memory"]["measured"] == arms["closed_loop"]["measured"] == cfg.env.n_games
    (comparison,) = report["comparisons"]
    assert comparison["difference"] > 0 and comparison["b"] > comparison["c"]
    assert comparison["significant"] is True, comparison
    assert comparison["difference"] >= comparison["mde"]  # the effect is above what n can detect
