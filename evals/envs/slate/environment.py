"""The slate environment behind the environment protocol (envs/registry.py): the household's
games (the same tasks, engine and curator), played by an executor that is shown a slate's names
and descriptions and reads with read_skill (executor.py). The heuristic executor is the
household's: it is handed every skill of the slate and chooses none, so it makes no selection to
measure (slates.py: NO_SELECTION). `skillos slate eval` and the selector trainer build their
game env and executors here.

Every other module reaches the slate through this object, `environment("slate")`, never by
importing envs/slate's files (tests/test_structure.py): the attributes below are what the
selector trainer, its baselines and canary, the slate eval, the renderer and the gates use."""

from __future__ import annotations

from skillos.evals.backends import build
from skillos.evals.envs.household.environment import Household
from skillos.evals.envs.slate import audit, executor, slates
from skillos.evals.envs.household.heuristic import HeuristicExecutor


class SlateEnvironment(Household):
    name = "slate"
    reference = "skillgate/alfworld"  # the selector configs' table (gates/references/skillgate.yaml)
    history_unused = "the slate executor (SkillGate) keeps its whole conversation"
    # beside the protocol: a trainer whose rollouts play slates retrieves nothing (gate 1's top-k-used)
    retrieval_unused = "the slate is the protocol; retrieval plays no part"

    # The prompt a selector is trained and evaluated on (slates.py).
    SYSTEM = slates.SYSTEM
    SLATE_INSTRUCTIONS = slates.SLATE_INSTRUCTIONS
    NO_SKILL_INSTRUCTIONS = slates.NO_SKILL_INSTRUCTIONS
    READ_TOOL = slates.READ_TOOL
    REASONING_OPEN, REASONING_CLOSE = slates.REASONING_OPEN, slates.REASONING_CLOSE
    tool_schemas = staticmethod(slates.tool_schemas)
    sent_templates = staticmethod(executor.sent_templates)  # the prompt and tools the executor sends
    tools_sent = staticmethod(executor.tools_sent)
    # Slates: built, frozen in a snapshot, loaded back, and what each held.
    SlateEnv = slates.SlateEnv  # one episode's tools: read_skill, act
    SlateRetriever = slates.SlateRetriever
    make_slate_setup = staticmethod(slates.make_slate_setup)
    build_slates = staticmethod(slates.build_slates)
    slate_sizes = staticmethod(slates.slate_sizes)
    freeze = staticmethod(slates.freeze)
    load_frozen = staticmethod(slates.load_frozen)
    manifest_of = staticmethod(slates.manifest_of)
    tasks_of = staticmethod(slates.tasks_of)
    scenes_of = staticmethod(slates.scenes_of)
    composition = staticmethod(slates.composition)
    render_audit = staticmethod(audit.render)
    # The static gate's checks of a slate skill folder.
    category_pools = staticmethod(slates.category_pools)
    missing_oracles = staticmethod(slates.missing_oracles)
    with_misleading = staticmethod(slates.with_misleading)
    # One episode's record and the selection metrics over many.
    admissible = staticmethod(slates.admissible)
    episode_record = staticmethod(slates.episode_record)
    selection_metrics = staticmethod(slates.selection_metrics)
    render_metrics = staticmethod(slates.render_metrics)

    model_executor = executor.SlateExecutor

    def make_executor(self, config):
        return build.executor(config, HeuristicExecutor, self.model_executor)

    def describe(self, cfg, split: str) -> str:
        return f"{super().describe(cfg, split)} with skill slates"


SLATE = SlateEnvironment()
