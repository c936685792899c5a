"""Every registered environment implements the `Environment` protocol (evals/envs/registry.py) and
builds its own executors and curators: its heuristic for the no-model backend, its model executor
for every model backend, and the one-line error for a name that is neither
(evals/backends/build.py). Each check also runs on a planted violation."""

import ast
import inspect
from types import SimpleNamespace

import pytest
from conftest import ROOT

from skillos.config import BackendConfig, CuratorConfig
from skillos.errors import SkillosError
from skillos.evals.backends import build
from skillos.evals.envs.registry import Environment, environment
from skillos.registry import BACKENDS, ENVIRONMENTS, model_backends

# executor and curator classes, (no-model backend, a model backend), and the curator's system prompt
BUILT = {
    "household": (("HeuristicExecutor", "LLMExecutor"), ("HeuristicCurator", "LLMCurator"), "household agent"),
    "reasoning": (("HeuristicReasoner", "LLMReasoner"), ("ReasoningCurator", "LLMCurator"), "problem-solving"),
    "slate": (("HeuristicExecutor", "SlateExecutor"), ("HeuristicCurator", "LLMCurator"), "household agent"),
}


def protocol_gaps(obj) -> list[str]:
    """What `obj` lacks of the protocol: a member absent, a method not callable or not taking the
    protocol's parameters, a value (name, reference, max_steps, curator_system) that is callable."""
    members = {n: v for n, v in vars(Environment).items() if not n.startswith("_")}
    values = set(Environment.__annotations__) | {n for n, v in members.items() if isinstance(v, property)}
    methods = {n: v for n, v in members.items() if inspect.isfunction(v)}
    gaps = [f"{n}: absent" for n in sorted(values | set(methods)) if not hasattr(obj, n)]
    gaps += [f"{n}: callable" for n in sorted(values)  # a class is a value (model_executor), a bound method is not
             if hasattr(obj, n) and callable(getattr(obj, n)) and not isinstance(getattr(obj, n), type)]
    for n, proto in methods.items():
        got = getattr(obj, n, None)
        if got is None:
            continue
        if not callable(got):
            gaps.append(f"{n}: not callable")
            continue
        wanted = [p for p in inspect.signature(proto).parameters if p != "self"]
        have = inspect.signature(got).parameters
        gaps += [f"{n}: no parameter {p}" for p in wanted if p not in have]
    return gaps


def test_the_protocol_lists_what_callers_use():
    members = set(Environment.__annotations__) | {n for n in vars(Environment) if not n.startswith("_")}
    assert members == {"name", "reference", "max_steps", "history_unused", "curator_system", "load_tasks", "make_env",
                       "make_executor", "make_curator", "group_sizes", "describe", "turns", "data_missing",
                       "model_executor"}


@pytest.mark.parametrize("name", ENVIRONMENTS.names())
def test_every_registered_environment_implements_the_protocol(name):
    env = environment(name)
    assert protocol_gaps(env) == []
    assert env.name == name and isinstance(env.curator_system, str) and env.max_steps >= 1


def test_a_missing_or_wrong_member_is_caught():
    class Partial:
        name, reference, max_steps, history_unused = "partial", "x/y", 1, None
        curator_system = "instructions"
        model_executor = object
        load_tasks = make_env = make_executor = make_curator = group_sizes = describe = lambda self, cfg: None
        data_missing = lambda self, cfg, split: None  # noqa: E731
        turns = 3  # a value where a method belongs

    gaps = protocol_gaps(Partial())
    assert "turns: not callable" in gaps and "load_tasks: no parameter split" in gaps
    del Partial.reference
    assert "reference: absent" in protocol_gaps(Partial())


@pytest.mark.parametrize("name", ENVIRONMENTS.names())
def test_each_environment_lives_in_the_folder_of_its_name(name):
    assert ENVIRONMENTS[name].target == f"skillos.evals.envs.{name}.environment:{name.upper()}"
    assert (ROOT / "evals" / "envs" / name / "environment.py").is_file()


def test_the_table_above_covers_every_registered_environment():
    assert set(BUILT) == set(ENVIRONMENTS.names())


@pytest.mark.parametrize("name", ENVIRONMENTS.names())
def test_each_environment_builds_its_own_executor_and_curator(name):
    (no_model, model), (heuristic_curator, model_curator), system = BUILT[name]
    env = environment(name)
    remote = dict(model="m", base_url="http://127.0.0.1:9", api_key_env="HOME")  # built, never called
    assert type(env.make_executor(BackendConfig())).__name__ == no_model
    assert type(env.make_executor(BackendConfig(backend="openai", **remote))).__name__ == model
    assert type(env.make_curator(CuratorConfig())).__name__ == heuristic_curator
    curator = env.make_curator(CuratorConfig(backend="openai", **remote), 8)
    assert type(curator).__name__ == model_curator and system in curator.system and curator.horizon == 8


@pytest.mark.parametrize("name", ENVIRONMENTS.names())
def test_an_unknown_backend_is_one_line_in_every_environment(name):
    env = environment(name)
    with pytest.raises(SkillosError, match=r"^executor.backend 'nope' is not a backend; use heuristic or one of "):
        env.make_executor(BackendConfig(backend="nope"))
    with pytest.raises(SkillosError, match=r"^curator.backend 'nope' is not a backend; use heuristic or one of "):
        env.make_curator(CuratorConfig(backend="nope"))


def test_the_builder_hands_every_model_backend_to_the_model_executor():
    built = [build.executor(SimpleNamespace(backend=b), heuristic=lambda: "rules", model=lambda c: c.backend)
             for b in model_backends()]
    assert built == list(model_backends())
    assert build.executor(SimpleNamespace(backend="heuristic"), heuristic=lambda: "rules", model=None) == "rules"


def test_the_executor_and_curator_modules_are_interfaces_that_ask_the_environment():
    """evals/executor.py and evals/curator.py name no backend and import no implementation; their
    make_* hand the config to the environment's own."""
    from skillos.evals.envs.registry import environment

    for path in ("evals/executor.py", "evals/curator.py"):
        tree = ast.parse((ROOT / path).read_text())
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not strings & set(BACKENDS.names()), path
        assert not [m for m in imported if m.startswith(("skillos.evals.backends", "skillos.evals.envs."))
                    and m != "skillos.evals.envs.registry"], path
    assert type(environment("household").make_executor(BackendConfig())).__name__ == "HeuristicExecutor"
    assert type(environment("reasoning").make_executor(BackendConfig())).__name__ == "HeuristicReasoner"
    assert type(environment("reasoning").make_curator(CuratorConfig(), None)).__name__ == "ReasoningCurator"
