"""The `sleep:` settings' rules live in the config (field bounds and choices, SleepConfig.rules): a
bad value is refused when the config loads, naming the key, before any night is planned."""

import pytest

from skillos import config
from skillos.errors import ConfigError


@pytest.mark.parametrize("sets, message", [
    (["sleep.optimizer.backend=gpt"], "sleep.optimizer.backend: 'gpt' is not one of heuristic, openai"),
    (["sleep.gate.mode=loose"], "sleep.gate.mode: 'loose' is not one of paired, strict"),
    (["sleep.schedule=step"], "sleep.schedule: 'step' is not one of cosine, linear, constant"),
    (["sleep.min_edits=5"], "sleep.min_edits (5) is above sleep.max_edits (4)"),
    (["sleep.steps=0"], "sleep.steps: must be between 1 and 10000, got 0"),
    (["sleep.max_sessions=0"], "sleep.max_sessions: must be between 1 and 10000000, got 0"),
    (["sleep.llm_miner=true"], "sleep.llm_miner: the LLM miner asks sleep.optimizer, which is heuristic"),
    (["sleep.budget.max_minutes=0"], "sleep.budget.max_minutes: must be between 1e-06 and 1e+07, got 0"),
    (["sleep.validation_share=0.5", "sleep.test_share=0.5"], "sleep.validation_share and sleep.test_share"),
])
def test_a_bad_sleep_setting_is_refused_at_load(sets, message):
    with pytest.raises(ConfigError) as info:
        config.with_sets(config.Config(), sets)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_good_sleep_settings_load():
    cfg = config.with_sets(config.Config(), ["sleep.optimizer.backend=openai", "sleep.llm_miner=true",
                                             "sleep.gate.mode=strict", "sleep.schedule=linear"])
    assert cfg.sleep.llm_miner and cfg.sleep.gate.mode == "strict"


def test_the_modes_and_schedules_have_one_home():
    from skillos.evals import stats
    from skillos.training.textopt import candidates

    assert config.GATE_MODES == stats.GATE_MODES  # the statistics module's gate accepts exactly these
    assert candidates.SCHEDULES is config.SCHEDULES  # the textual learning rate's schedules (optimize and sleep)
