"""The config package: one short module per section, each field's bounds and choices in its metadata
read by one validator (config/fields.py check_fields), and every rule that remains able to fire.

The last test traces every `raise ConfigError` and every decoding rule's refusal in the package
while the cases below run: a rule no case can reach is dead and fails the test, so a new rule
ships with the case that fires it."""

import ast
import dataclasses
import math
import sys
from pathlib import Path

import pytest

from skillos import config
from skillos.config import fields as fields_module
from skillos.errors import ConfigError

PACKAGE = Path(config.__file__).parent


def rule_files() -> list:
    """The config package's modules and each module holding a backend's decoding rule (beside its
    backend: the registry entry's `decoding`)."""
    import importlib

    from skillos.registry import BACKENDS

    rules = {Path(importlib.import_module(b.decoding.partition(":")[0]).__file__) for b in BACKENDS if b.decoding}
    return sorted(PACKAGE.glob("*.py")) + sorted(rules)


def walk(cls=config.Config, where=""):
    """(dotted key, field) for every leaf field of the schema, sections recursed."""
    for f in dataclasses.fields(cls):
        key = f"{where}.{f.name}" if where else f.name
        if dataclasses.is_dataclass(f.default_factory):
            yield from walk(f.default_factory, key)
        else:
            yield key, f


def nested(key: str, value) -> dict:
    out = value
    for part in reversed(key.split(".")):
        out = {part: out}
    return out


BOUNDED = [(key, f.metadata["bounds"]) for key, f in walk() if "bounds" in f.metadata]
CHOSEN = [(key, f) for key, f in walk() if "choices" in f.metadata]


def test_field_rules_live_in_metadata_next_to_the_help():
    assert len(BOUNDED) > 90 and len(CHOSEN) > 25
    for key, f in walk():
        assert f.metadata.get("help"), f"{key}: no help"
        assert set(f.metadata) <= {"help", "bounds", "choices", "shorthand"}, key
    # the backend section is defined once: every section of it carries the same bounds
    backends = [key for key, f in walk() if key.endswith(".max_retries")]
    assert {"executor.max_retries", "curator.max_retries", "judge.max_retries", "optimize.optimizer.max_retries",
            "sleep.model.max_retries", "sleep.optimizer.max_retries", "skillgate.teacher.max_retries"} <= set(backends)


@pytest.mark.parametrize("key, bounds", BOUNDED, ids=[k for k, _ in BOUNDED])
def test_every_bound_fires_below_and_above(key, bounds):
    low, high = bounds
    for value in (low - 1, high + 1):
        with pytest.raises(ConfigError) as info:
            config.from_dict(nested(key, value))
        assert str(info.value).startswith(f"{key}: must be between"), str(info.value)
    if isinstance(low, float):
        with pytest.raises(ConfigError, match=f"^{key}: must be a finite number"):
            config.from_dict(nested(key, math.nan))


@pytest.mark.parametrize("key, f", CHOSEN, ids=[k for k, _ in CHOSEN])
def test_every_choice_fires(key, f):
    hint = fields_module.hints(type(config.lookup(config.Config(), key.rsplit(".", 1)[0])) if "." in key
                               else config.Config)[f.name]
    value = ["not-a-choice"] if "list" in str(hint) and "str" not in str(hint) else "not-a-choice"
    with pytest.raises(ConfigError) as info:
        config.from_dict(nested(key, value))
    assert str(info.value).startswith(f"{key}: 'not-a-choice' is not one of"), str(info.value)


def _shared_list_config():
    cfg, shared = config.Config(), ["a"]
    cfg.divergences = {f"k{i}": {"value": shared, "reason": "r"} for i in range(150)}
    return cfg


def _cycle_config():
    cfg, loop = config.Config(), []
    loop.append(loop)
    cfg.divergences = {"k": {"value": loop, "reason": "r"}}
    return cfg


def _deep_config():
    cfg, deep = config.Config(), "x"
    for _ in range(120):
        deep = [deep]
    cfg.divergences = {"k": {"value": deep, "reason": "r"}}
    return cfg


def _attr_config(**sections):
    cfg = config.Config()
    for dotted, value in sections.items():
        *path, leaf = dotted.split("__")
        setattr(config.lookup(cfg, ".".join(path)) if path else cfg, leaf, value)
    return cfg


MODEL = {"backend": "openai", "model": "m"}
# (what to run, the start of the one-line error): each reaches one rule of the package
CASES = [
    # building a section from YAML: fields.py
    (lambda: config.from_dict({"env": 3}), "env: expected a mapping"),
    (lambda: config.from_dict({"env": {"n_gamez": 3}}), "env.n_gamez: unknown key (did you mean 'n_games'?)"),
    (lambda: config.from_dict({"env": {"n_games": None}}), "env.n_games: must be set, got null"),
    (lambda: config.from_dict({"env": {"n_games": "six"}}), "env.n_games: expected int"),
    (lambda: config.from_dict({"eval": {"alpha": math.nan}}), "eval.alpha: must be a finite number"),
    # sections' own rules
    (lambda: config.from_dict({"experiment": {"name": "a b"}}), "experiment.name: 'a b' must be"),
    (lambda: config.from_dict({"judge": {**MODEL, "usd_per_mtok": [1, -2]}}), "judge.usd_per_mtok: [input, output]"),
    (lambda: config.from_dict({"env": {"split": "train"}}), "env.split and env.train_split are both"),
    (lambda: config.from_dict({"env": {"name": "reasoning", "engine_workers": 2}}),
     "env.engine_workers: the 'reasoning' environment has no game engine"),
    (lambda: config.from_dict({"env": {"reasoning": {"datasets": {"dev": "generated"}}}}),
     "env.reasoning.datasets.dev: not a split"),
    (lambda: config.from_dict({"env": {"reasoning": {"datasets": {"train": "mmlu"}}}}),
     "env.reasoning.datasets.train: 'mmlu' is not one of"),
    (lambda: config.from_dict({"training": {"report_to": ["wandb", "wandb"]}}),
     "training.report_to: ['wandb', 'wandb'] names one integration twice"),
    (lambda: config.from_dict({"training": {"curriculum": "interleaved", "grouping": "natural"}}),
     "training.curriculum interleaved takes task types in turns, and training.grouping natural draws groups"),
    (lambda: config.from_dict({"training": {"max_staleness": 2}}),
     "training.max_staleness (2) bounds asynchronous rollouts, and training.async_rollouts is off"),
    (lambda: config.from_dict({"training": {"async_rollouts": True}, "skillgate": {"trainer": "selector-bc"}}),
     "training.async_rollouts: skillgate.trainer selector-bc trains on-policy only"),
    (lambda: config.from_dict({"training": {"async_rollouts": True}, "compute": {"num_processes": 4}}),
     "training.async_rollouts: runs in one process"),
    (lambda: config.from_dict({"training": {"async_rollouts": True, "use_vllm": True}}),
     "training.async_rollouts: generates with a copy of the policy in this process, not through vLLM"),
    (lambda: config.from_dict({"training": {"async_rollouts": True}, "compute": {"deepspeed_config": "zero3.json"}}),
     "training.async_rollouts: copies the policy's weights between steps, which DeepSpeed"),
    (lambda: config.from_dict({"training": {"async_rollouts": True, "max_staleness": 1, "generation_batch_size": 16}}),
     "training.async_rollouts: generation_batch_size is set without per_device_train_batch_size"),
    (lambda: config.from_dict({"training": {"async_rollouts": True, "max_staleness": 1, "generation_batch_size": 16,
                                            "per_device_train_batch_size": 8}}),
     "training.async_rollouts: one generation batch (16 completions) serves 2 optimizer steps of 8"),
    (lambda: config.from_dict({"training": {"report_to": ["none", "wandb"]}}), "training.report_to: ['none', 'wandb']"),
    (lambda: config.from_dict({"training": {"max_turn_tokens": 9, "max_completion_length": 8}}),
     "training.max_turn_tokens (9) is above training.max_completion_length (8)"),
    (lambda: config.from_dict({"compute": {"ray_address": "not an address"}}), "compute.ray_address: 'not an address'"),
    (lambda: config.from_dict({"compute": {"gpu": "H100:99"}}), "compute.gpu: 'H100:99'"),
    (lambda: config.from_dict({"compute": {"servers": {"curator": {"gpus": 1}}}}),
     "compute.servers role: 'curator' is not one of executor, judge"),
    (lambda: config.from_dict({"compute": {"servers": {"executor": 1}}}), "compute.servers.executor: a mapping"),
    (lambda: config.from_dict({"compute": {"servers": {"executor": {"gpuz": 1}}}}),
     "compute.servers.executor.gpuz: unknown key"),
    (lambda: config.from_dict({"compute": {"servers": {"executor": {"gpus": 0}}}}),
     "compute.servers.executor.gpus: a number from 1 to 1024, got 0"),
    (lambda: config.from_dict({"eval": {"arms": []}}), "eval.arms: name at least one arm"),
    (lambda: config.from_dict({"eval": {"arms": ["no_memory", "repo:x"]}}), "eval.arms[1]: 'repo:x' names no folder"),
    (lambda: config.from_dict({"eval": {"arms": ["no_memory", "curator:x"]}}),
     "eval.arms[1]: 'curator:x' names no checkpoint"),
    (lambda: config.from_dict({"eval": {"arms": ["no_memory", "closed_loops"]}}), "eval.arms[1]: unknown arm"),
    (lambda: config.from_dict({"eval": {"arms": ["no_memory", "no_memory"]}}), "eval.arms: an arm is listed twice"),
    (lambda: config.from_dict({"eval": {"arms": ["closed_loop"]}}), "eval.control: 'no_memory' is not among"),
    (lambda: config.from_dict({"eval": {"max_error_rate": 1.0}}), "eval.max_error_rate: a share in [0, 1)"),
    (lambda: config.from_dict({"eval": {"arms": ["no_memory", "static_repo"]}}),
     "eval.static_repo: the static_repo arm needs"),
    (lambda: config.from_dict({"optimize": {"max_lines": 4, "min_lines": 5}}),
     "optimize.min_lines (5) is above optimize.max_lines (4)"),
    (lambda: config.from_dict({"optimize": {"document": "x.md"}}), "optimize.document: set only with"),
    (lambda: config.from_dict({"skillgate": {"init": "oracle-warmup"}}), "skillgate.init: oracle-warmup was SFT"),
    (lambda: config.from_dict({"skillgate": {"slate_size": 8}}), "skillgate.slate_size: 8 cannot hold"),
    (lambda: config.from_dict({"skillgate": {"init": "sft"}}), "skillgate.init: sft clones a teacher's"),
    (lambda: config.from_dict({"sleep": {"min_edits": 5}}), "sleep.min_edits (5) is above sleep.max_edits (4)"),
    (lambda: config.from_dict({"sleep": {"llm_miner": True}}), "sleep.llm_miner: the LLM miner asks"),
    (lambda: config.from_dict({"sleep": {"validation_share": 0.5, "test_share": 0.5}}),
     "sleep.validation_share and sleep.test_share"),
    (lambda: config.from_dict({"canary": {"seeds": [1, 1]}}), "canary.seeds: 1 to 64 distinct integer seeds"),
    # a backend's decoding rules (its registry entry's `decoding`)
    (lambda: config.from_dict({"executor": {"backend": "hf", "reasoning_effort": "high"}}),
     "executor.reasoning_effort: 'high' has no meaning for backend hf"),
    (lambda: config.from_dict({"curator": {"backend": "vllm", "temperature": 0, "top_k": 5}}),
     "curator.top_p / top_k: temperature 0 is greedy"),
    (lambda: config.from_dict({"executor": {**MODEL, "reasoning_effort": "on"}}),
     "executor.reasoning_effort: 'on' is the chat-template switch"),
    (lambda: config.from_dict({"executor": {**MODEL, "top_k": 5}}), "executor.top_k: the OpenAI API has no top_k"),
    (lambda: config.from_dict({"judge": {"backend": "anthropic", "reasoning_effort": "on"}}),
     "judge.reasoning_effort: 'on' is the chat-template switch"),
    (lambda: config.from_dict({"executor": {"backend": "anthropic", "model": "m", "decoding": "admissible"}}),
     "executor.decoding: admissible needs a backend that scores"),
    (lambda: config.from_dict({"executor": {"backend": "openai", "model": "m", "decoding": "admissible"}}),
     "executor.decoding: admissible scores each action from the prompt's echoed log-probabilities"),
    (lambda: config.from_dict({"executor": {"backend": "hf", "model": "m", "decoding": "admissible",
                                            "reasoning_effort": "on"}}),
     "executor.reasoning_effort: admissible decoding scores the action"),
    (lambda: config.from_dict({"judge": {"backend": "anthropic", "reasoning_effort": "low", "temperature": 0.5}}),
     "judge: extended thinking (reasoning_effort low)"),
    (lambda: config.from_dict({"judge": {"backend": "anthropic", "reasoning_effort": "low", "max_tokens": 1024}}),
     "judge.max_tokens: 1024 leaves no room"),
    # across sections: rules.py
    (lambda: config.from_dict({"env": {"reasoning": {"min_group_size": 4}}, "training": {"group_size": 3}}),
     "env.reasoning.min_group_size: 4 is above training.group_size 3"),
    (lambda: config.from_dict({"divergences": {"k": 1}}), "divergences.k: expected a mapping"),
    (lambda: config.load(_file("divergences: {a: {value: 2024-01-01, reason: r}}")), "divergences: holds a value"),
    (lambda: config.from_dict({"divergences": {1: {"value": 1, "reason": "r"}, "b": {"value": 1, "reason": "r"}}}),
     "divergences: holds a value"),
    (lambda: config.from_dict({"compute": {"servers": {"executor": {1: 2}}}}), "compute.servers.executor.1: unknown key"),
    (lambda: config.from_dict({"env": {"reasoning": {"datasets": {1: "generated", "foo": "generated"}}}}),
     "env.reasoning.datasets.1: not a split"),
    (lambda: config.from_dict({"divergences": {"k": {"value": 1, "reason": " "}}}), "divergences.k: a declared"),
    (lambda: config.from_dict({"eval": {"output_dir": " "}}), "eval.output_dir: must be a folder path"),
    (lambda: config.check_inputs(config.from_dict({"eval": {"arms": ["no_memory", "static_repo"],
                                                             "static_repo": "/nonexistent"}})),
     "eval.static_repo: '/nonexistent' is missing"),
    (lambda: config.check_inputs(config.from_dict({"optimize": {"meta_skill": "/"}})), "optimize.meta_skill: '/' is a folder"),
    (lambda: config.check_inputs(_attr_config(eval__static_repos={"x": 3})), "eval.static_repos.x: expected a folder"),
    (lambda: config.check_inputs(_attr_config(eval__curators={"x": 3})), "eval.curators.x: expected a checkpoint"),
    (lambda: config.check_inputs(config.from_dict({"eval": {"output_dir": __file__}})), "eval.output_dir: "),
    # matrix and seeds: matrix.py
    (lambda: config.from_dict({"experiment": {"seeds": []}}), "experiment.seeds: a list of integer seeds"),
    (lambda: config.from_dict({"experiment": {"seeds": [1, 1]}}), "experiment.seeds: a seed is repeated"),
    (lambda: config.from_dict({"matrix": {"a": {"key": "env.seed", "values": list(range(600))}}}),
     "matrix.a.key: 'env.seed': seeds go in experiment.seeds"),
    (lambda: config.from_dict({"matrix": {"a": {"key": "env.n_games", "values": list(range(1, 600))}}}),
     "matrix: 599 runs"),
    (lambda: config.from_dict({"matrix": {"a": {"key": "env.n_games", "values": [1, 0]}}}), "matrix run a-0: env.n_games"),
    (lambda: config.from_dict({"matrix": {"a": {"key": "experiment.hypothesis", "values": ["x y", "x-y"]}}}),
     "matrix: two runs get the same folder name"),
    (lambda: config.from_dict({"matrix": {"a b": {"key": "env.n_games", "values": [1]}}}), "matrix.a b: an axis name"),
    (lambda: config.from_dict({"matrix": {"a": {"key": "env.n_games"}}}), "matrix.a: expected {key: CONFIG.KEY"),
    (lambda: config.from_dict({"matrix": {"a": {"key": "env.nope", "values": [1]}}}), "matrix.a.key: 'env.nope' is not"),
    (lambda: config.from_dict({"matrix": {"a": {"key": "env.n_games", "values": []}}}), "matrix.a.values: a non-empty"),
    (lambda: config.from_dict({"matrix": {"a": {"key": "env.n_games", "values": [1, 1]}}}), "matrix.a.values: a value"),
    (lambda: config.from_dict({"matrix": {"a": {"key": "env", "values": [{}]}, "b": {"key": "env.n_games", "values": [1]}}}),
     "matrix.b.key: 'env.n_games' overlaps matrix.a.key 'env'"),
    # --set: sets.py
    (lambda: config.parse_set("env.n_games"), "--set 'env.n_games': expected KEY=VALUE"),
    (lambda: config.parse_set("x=" + "a" * (1 << 20)), "--set x: the value is over"),
    (lambda: config.parse_set("x=[1, 2"), "--set x"),
    (lambda: config.parse_set("env="), "--set 'env=': env is a section"),
    (lambda: config.apply_sets({"env": {"n_games": 3}}, ["env.n_games.x=1"]), "--set 'env.n_games.x=1': env.n_games is not"),
    (lambda: config.revalidate(_deep_config()), "config: nested more than"),
    (lambda: config.revalidate(_attr_config(experiment__hypothesis="x" * ((1 << 20) + 1))), "config: more than"),
    (lambda: config.revalidate(_cycle_config()), "config: refers to itself"),
    (lambda: config.revalidate(_shared_list_config()), "config: more than 100 shared values"),
    (lambda: config.revalidate(_attr_config(divergences={"k": {"value": list(range(100_001)), "reason": "r"}})),
     "config: expands to more than"),
    (lambda: config.revalidate(_attr_config(env__n_games=0)), "env.n_games: must be between"),
    # files: loading.py
    (lambda: config.load(_file("env: [1, 2")), "bad.yaml"),
    (lambda: config.load(_file("")), "bad.yaml: the config is empty"),
    (lambda: config.load(_file("env: {n_games: 0}")), "bad.yaml: env.n_games: must be between"),
    # explain: schema.py
    (lambda: config.explain("env.n_games.x"), "env.n_games.x: env.n_games is a setting"),
    (lambda: config.explain("env.n_gamez"), "env.n_gamez: not a key of env"),
]


def _file(text: str) -> Path:
    path = Path(_file.folder) / "bad.yaml"
    path.write_text(text)
    return path


def rule_lines() -> set:
    """(file, line) of every rule in the package: each `raise ConfigError(...)`, and each refusal a
    backend's decoding rule returns."""
    out = set()
    for path in rule_files():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) \
                    and getattr(node.exc.func, "id", None) == "ConfigError":
                out.add((str(path), node.lineno))
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_decoding"):
                out.update((str(path), r.lineno) for r in ast.walk(node)
                           if isinstance(r, ast.Return) and not isinstance(r.value, ast.Constant))
    return out


def test_every_rule_can_fire(tmp_path):
    _file.folder = tmp_path
    hit, traced = set(), {str(p) for p in rule_files()}

    def tracer(frame, event, arg):
        if frame.f_code.co_filename not in traced:
            return None

        def lines(frame, event, arg):
            if event == "line":
                hit.add((frame.f_code.co_filename, frame.f_lineno))
            return lines
        return lines

    misses = []
    for run, start in CASES:
        sys.settrace(tracer)
        try:
            run()
        except ConfigError as exc:
            if not str(exc).startswith(start) and start not in str(exc):
                misses.append(f"{start!r}: got {exc}")
            elif "\n" in str(exc):
                misses.append(f"{start!r}: more than one line")
        else:
            misses.append(f"{start!r}: nothing refused")
        finally:
            sys.settrace(None)
    assert not misses, misses
    dead = sorted(f"{Path(f).name}:{n}" for f, n in rule_lines() - hit)
    assert not dead, f"rules no case reaches (dead, or a case is missing): {dead}"


def test_the_package_is_short_modules_without_circles():
    for path in PACKAGE.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 200, path.name
    # inside the package, imports go one way: each module imports only modules before it in ORDER
    order = ["fields", "experiment", "env", "backend", "training", "compute", "eval", "optimize", "skillgate",
             "sleep", "canary", "sweep", "schema", "derived", "rules", "sets", "matrix", "loading"]
    assert sorted(order) == sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    for name in order:
        tree = ast.parse((PACKAGE / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("skillos.config"):
                used = (node.module or "").removeprefix("skillos.config").lstrip(".")
                assert used and order.index(used) < order.index(name), f"{name} imports {node.module}"


def test_skillos_modules_import_the_submodule_that_owns_a_name():
    """`skillos.config` is the public face for users and tests; skillos's own modules import the
    section, loading or derived module they use, so no module is everyone's junction."""
    root = PACKAGE.parent.parent
    offenders = []
    for folder in ("toolkit", "evals", "training", "ledger"):
        for path in (root / folder).rglob("*.py"):
            if PACKAGE in path.parents:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (
                        node.module == "skillos.config"
                        or (node.module == "skillos" and any(a.name == "config" for a in node.names))):
                    offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not offenders, offenders
