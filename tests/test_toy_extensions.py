"""A new environment and a new model backend are a folder and one registry entry each
(docs/extending.md), nothing else: a toy environment and a toy backend written outside skillos's
source, registered in ENVIRONMENTS and BACKENDS, pass the gates and play a real eval through the
runner, the arms and the statistics; no skillos module is edited. (The toy method is
tests/test_toy_method.py.)"""

import textwrap

import pytest

from conftest import ROOT
from test_environments import protocol_gaps
from skillos import api, gates
from skillos.evals.envs.registry import environment
from skillos.registry import BACKENDS, ENVIRONMENTS, Backend, local_backends, model_backends
from skillos.registry import Environment as EnvironmentEntry

TOY_ENV = '''
    """A toy environment: press the button whose colour the task names. Its executor presses the first
    button unless a skill names the task's colour; its curator writes that skill after a lost game."""
    import hashlib
    from dataclasses import dataclass

    from skillos.evals.backends import build
    from skillos.evals.envs.household.llm import LLMExecutor
    from skillos.evals.envs.registry import Observation

    COLOURS = ("red", "blue")


    @dataclass(frozen=True)
    class Task:
        id: str
        path: str
        task: str
        task_type: str
        content_hash: str


    class ButtonEnv:
        def __init__(self, tasks=()):
            self.tasks, self.task = {t.path: t for t in tasks}, ""

        def load(self, path):
            self.current = self.tasks[path]

        def reset(self):
            self.task = self.current.task
            return Observation(self.task, tuple(f"press {c}" for c in COLOURS), False)

        def step(self, action):
            return Observation("click", (), action == f"press {self.current.task_type}")


    class Presser:
        name = "toy-presser"

        def new_episode(self, task, skills):
            self.task, self.skills = task, skills
            return self

        def act(self, observation, admissible):
            named = [s.name.removesuffix("-button") for s in self.skills if s.name.removesuffix("-button") in self.task]
            return f"press {named[0]}" if named else admissible[0]


    class Noter:
        name = "toy-noter"

        def curate(self, trajectory, repo):
            if trajectory.won:
                return []
            return [repo.insert(f"{trajectory.task_type}-button", f"press {trajectory.task_type} when the task names it")]


    class Toy:
        name = "toy"
        reference = "skillos-paper-reasoning/reasoning"  # its turn limit is one press, as that table's
        max_steps = 1
        history_unused = "one press per task: nothing before it to show"
        curator_system = "You keep notes on which button to press."

        def data_missing(self, cfg, split):
            return None

        def load_tasks(self, cfg, split, n, progress=None):
            tasks = []
            for i in range(n):
                colour = COLOURS[i % 2]
                text = f"press the {colour} button ({split} {cfg.env.seed}-{i})"
                tasks.append(Task(f"{split}-{i}", f"{split}-{i}", text, colour, hashlib.sha256(text.encode()).hexdigest()))
            return tasks

        def make_env(self, tasks=()):
            return ButtonEnv(tasks)

        @property
        def model_executor(self):
            return LLMExecutor

        def make_executor(self, config):
            return build.executor(config, Presser, self.model_executor)

        def make_curator(self, config, horizon=None):
            return build.curator(config, Noter, horizon, self.curator_system)

        def group_sizes(self, cfg):
            return cfg.training.group_size, cfg.training.group_size

        def describe(self, cfg, split):
            return f"toy buttons ({split})"

        def turns(self, cfg):
            return 1


    TOY = Toy()
    '''

TOY_BACKEND = '''
    """A toy model backend: replies with the first admissible command its prompt lists."""
    import re

    from skillos.evals.backends.chat import ChatResult


    class ToyChat:
        def __init__(self, config):
            self.model, self.temperature, self.max_tokens = config.model, config.temperature, config.max_tokens
            self.prompts = 0

        def chat(self, messages, tools=None):
            self.prompts += 1
            text = messages[-1]["content"]
            listed = re.search(r"Admissible (?:actions|commands)[^\\n]*:\\s*\\n?\\s*-?\\s*([^\\n,]+)", text)
            return ChatResult(listed.group(1).strip() if listed else "look", prompt_tokens=len(text.split()),
                              completion_tokens=1)


    def sent(config):
        """What a request carries: the model, its temperature and its token budget, and nothing else."""
        return {"model": ("ToyChat.model", config.model), "temperature": ("ToyChat.temperature", config.temperature),
                "max_tokens": ("ToyChat.max_tokens", config.max_tokens)}
    '''


def write(folder, monkeypatch, package: str, module: str, text: str) -> None:
    (folder / package).mkdir()
    (folder / package / "__init__.py").write_text("")
    (folder / package / f"{module}.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(folder))


@pytest.fixture
def toy_environment(tmp_path, monkeypatch):
    write(tmp_path, monkeypatch, "toy_env", "environment", TOY_ENV)
    with ENVIRONMENTS.extended(EnvironmentEntry("toy", "toy_env.environment:TOY", about="buttons")):
        yield


@pytest.fixture
def toy_backend(tmp_path, monkeypatch):
    write(tmp_path, monkeypatch, "toy_backend", "chat", TOY_BACKEND)
    # not `local`: it runs no weights here, so arm workers fork and see this entry
    with BACKENDS.extended(Backend("toy", chat="toy_backend.chat:ToyChat", about="a toy",
                                   decoding="skillos.evals.backends.chat:local_decoding")):
        yield


def test_an_environment_added_through_the_registry_alone_is_gated_and_evaluated(toy_environment, tmp_path):
    cfg = api.load(ROOT / "evals" / "configs" / "quickstart.yaml",
                   sets=["env.name=toy", "env.n_games=6", "env.n_train_games=4", "env.max_steps=1",
                         "reference=skillos-paper-reasoning/reasoning"])
    assert protocol_gaps(environment(cfg)) == []
    report = api.evaluate(cfg, out=tmp_path / "out", ledger=None)
    arms = report["arms"]
    # the toy's own executor and curator played: no memory presses red on every task (3 of 6, the red
    # ones); the closed loop's curator wrote the blue skill after a lost train game, and it won them all
    assert (arms["no_memory"]["successes"], arms["no_memory"]["measured"]) == (3, 6)
    assert (arms["closed_loop"]["successes"], arms["closed_loop"]["measured"]) == (6, 6)
    assert arms["no_memory"]["by_task_type"]["blue"] == {"attempted": 3, "measured": 3, "successes": 0}
    assert report["env"]["held_out_from"] == "toy buttons (valid_unseen)"


def test_an_unregistered_environment_is_one_line(tmp_path):
    with pytest.raises(Exception, match=r"env\.name.*toy.*(household|environment)"):
        api.load(ROOT / "evals" / "configs" / "quickstart.yaml", sets=["env.name=toy"])


def test_a_backend_added_through_the_registry_alone_is_gated_and_plays(toy_backend, tmp_path):
    assert "toy" in model_backends() and "toy" not in local_backends()
    cfg = api.load(ROOT / "evals" / "configs" / "smollm2-hf.yaml", sets=["executor.backend=toy", "executor.model=toy-1"])
    report = api.evaluate(cfg, out=tmp_path / "out", ledger=None)
    for arm in report["arms"].values():  # every game measured, every action the toy's (never coerced)
        assert arm["measured"] == arm["attempted"] == 2 and arm["actions"] == 8 and arm["coerced_actions"] == 0


def test_a_setting_a_backends_requests_do_not_carry_is_traced_as_reaching_no_code(toy_backend):
    """The toy's `sent` says its requests carry no top_p: the trace says so, and a config setting one
    fails the trace (checked, not applied) instead of the trace crashing."""
    cfg = api.load(ROOT / "evals" / "configs" / "smollm2-hf.yaml",
                   sets=["executor.backend=toy", "executor.model=toy-1", "executor.temperature=0.7", "executor.top_p=0.9"])
    with pytest.raises(gates.GateRefused) as refused:
        api.check(cfg, dry_run=True)
    (row,) = [r for r in refused.value.report.results if r.check == "trace" and "top_p" in (r.detail or "")]
    assert row.status == "FAIL" and "the toy backend's requests carry no top_p" in row.detail


def test_a_plugin_backends_missing_module_is_caught_by_the_gates_and_listed_by_doctor(tmp_path, monkeypatch):
    """Gate 1's extras check and `skillos doctor` read the backends from the registry when they run:
    a plug-in backend whose module is not installed is a one-line FAIL naming its install line."""
    from skillos import doctor

    write(tmp_path, monkeypatch, "toy_backend", "chat", TOY_BACKEND)
    with BACKENDS.extended(Backend("toy", chat="toy_backend.chat:ToyChat", about="a toy", extra="toy",
                                   modules=("toy_sdk_not_installed",), install="pip install toy-sdk",
                                   decoding="skillos.evals.backends.chat:local_decoding")):
        assert ("toy_sdk_not_installed", "pip install toy-sdk", "backend toy") in doctor.extras()
        cfg = api.load(ROOT / "evals" / "configs" / "smollm2-hf.yaml",
                       sets=["executor.backend=toy", "executor.model=toy-1"])
        with pytest.raises(gates.GateRefused) as refused:
            api.check(cfg, partial=True)
    (row,) = [r for r in refused.value.report.results if r.check == "extras" and r.status == "FAIL"]
    assert "toy_sdk_not_installed" in row.seen and "pip install toy-sdk" in row.detail
