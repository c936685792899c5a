"""Every config key carries its help in its dataclass field (its section's module in the config
package is the one home of what a key means, its default, bounds and choices), and the CLI reaches it: `skillos config explain KEY` and the
unknown-key error of a file or a --set."""

import dataclasses
import json

import pytest

from conftest import run_cli
from skillos import config
from skillos.errors import ConfigError


def every_field(cls=config.Config, prefix=""):
    """(dotted key, field) for every field of every config dataclass, sections included."""
    for f in dataclasses.fields(cls):
        yield prefix + f.name, f
        if dataclasses.is_dataclass(f.default_factory):
            yield from every_field(f.default_factory, f"{prefix}{f.name}.")


def test_every_config_field_has_help():
    keys = dict(every_field())
    assert len(keys) > 190  # the walk reaches every section (it found 210 keys when written)
    missing = [key for key, f in keys.items() if not str(f.metadata.get("help") or "").strip()]
    assert missing == []


def test_the_help_check_can_fail():
    @dataclasses.dataclass
    class Planted:
        said: int = dataclasses.field(default=1, metadata={"help": "a key"})
        silent: int = 2

    assert [k for k, f in every_field(Planted) if not f.metadata.get("help")] == ["silent"]


def test_explain_gives_a_keys_help_type_and_default():
    e = config.explain("eval.alpha")
    assert e == {"key": "eval.alpha", "type": "float", "default": 0.05,
                 "help": config.EvalConfig.__dataclass_fields__["alpha"].metadata["help"]}
    section = config.explain("optimize.gate")
    assert set(section["keys"]) == {"mode", "k", "max_unmeasured"} and "default" not in section
    with pytest.raises(ConfigError, match=r"eval.alpah: not a key of eval \(did you mean 'alpha'\?\)"):
        config.explain("eval.alpah")
    with pytest.raises(ConfigError, match="eval.alpha is a setting, not a section"):
        config.explain("eval.alpha.x")


def test_cli_config_explain_prints_the_help_and_default():
    result = run_cli("config", "explain", "env.n_games")
    help_text = config.explain("env.n_games")["help"]
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"env.n_games (int, default 60): {help_text}"
    as_json = run_cli("config", "explain", "optimize.gate.k", "--json")
    assert json.loads(as_json.stdout)["default"] == 2.0
    bad = run_cli("config", "explain", "env.n_gmaes")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "did you mean 'n_games'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_an_unknown_set_key_shows_the_meant_keys_help(tmp_path):
    with pytest.raises(ConfigError) as info:
        config.with_sets(config.from_dict({}), ["env.n_gmaes=3"])
    help_text = config.explain("env.n_games")["help"]
    assert str(info.value) == (f"env.n_gmaes: unknown key (did you mean 'n_games'?); n_games: {help_text} "
                               "(default 60)")
