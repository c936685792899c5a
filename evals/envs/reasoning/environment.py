"""The reasoning environment behind the environment protocol (envs/registry.py): one task is
a problem, the executor answers it in one turn with the top-k retrieved skills in its prompt,
and the reply is graded (grading.py). The env takes free text (no admissible list), so the
runner's `play` plays it unchanged with env.max_steps 1."""

from __future__ import annotations


from skillos.config.derived import relative_to_config
from skillos.evals.backends import build
from skillos.evals.envs.reasoning import datasets, generator
from skillos.evals.envs.reasoning.grading import grade
from skillos.evals.envs.registry import Observation
from skillos.errors import SkillosError
from skillos.evals.envs.reasoning.heuristic import HeuristicReasoner, ReasoningCurator
from skillos.evals.envs.reasoning.llm import LLMReasoner

CURATOR_SYSTEM = ("You maintain a repository of skills (short markdown guides) that a problem-solving "
                  "agent retrieves before each math or science problem. After each problem, add, rewrite "
                  "or delete skills so the agent solves the next problems better.")


class ReasoningEnv:
    """`load(problem id)`, `reset()` -> the problem, `step(reply)` -> the grade."""

    def __init__(self, tasks=()):
        self.problems = {p.id: p for p in tasks}
        self.problem = None
        self.task = ""

    def load(self, path: str) -> None:
        if path not in self.problems:
            raise KeyError(f"problem {path!r} is not in this env's pool")
        self.problem = self.problems[path]

    def reset(self) -> Observation:
        self.task = self.problem.task
        return Observation(self.problem.task, (), False)

    def step(self, reply: str) -> Observation:
        p = self.problem
        result = grade(p.grading, p.answer, reply)
        if result.extracted is None:
            feedback = "No final answer could be extracted (graded wrong)."
        elif result.timed_out:
            feedback = (f"Final answer read: {result.extracted}. Grading it passed the time bound "
                        "(graded wrong).")
        else:
            feedback = f"Final answer read: {result.extracted}. " + ("Correct." if result.correct else "Incorrect.")
        return Observation(feedback, (), result.correct, result.timed_out, unread_answer=result.extracted is None)


class Reasoning:
    name = "reasoning"
    reference = "skillos-paper-reasoning/reasoning"
    max_steps = 1  # one executor turn per problem
    history_unused = "the reasoning executor answers in one turn with no history"
    curator_system = CURATOR_SYSTEM

    def data_missing(self, cfg, split: str) -> str | None:
        import importlib.util

        if importlib.util.find_spec("math_verify") is None:
            return "env.name reasoning grades with math-verify, which is not installed: pip install 'skillos[reasoning]'"
        r = cfg.env.reasoning
        source = r.datasets.get(split)
        if source is None:
            return f"env.reasoning.datasets names no problem set for split {split!r}"
        if source == "generated":
            return None
        spec = datasets.HUB.get(source)
        folder = relative_to_config(cfg, r.data_dir) / spec.repo if spec else None
        if folder is not None and not folder.is_dir():
            return f"dataset {source} ({spec.repo}): no folder {folder}; {spec.fetch_hint(folder)} (nothing downloads at run time)"
        return None

    def load_tasks(self, cfg, split: str, n: int, progress=None):
        import importlib.util

        if importlib.util.find_spec("math_verify") is None:  # before anything plays, not per problem
            raise SkillosError("env.name reasoning grades with math-verify, which is not installed: "
                               "pip install 'skillos[reasoning]'")
        r = cfg.env.reasoning
        source = r.datasets.get(split)
        if source is None:
            raise SkillosError(f"env.reasoning.datasets names no problem set for split {split!r}")
        if source == "generated":
            tasks = generator.generate(split, n, cfg.env.seed, r.families, r.choice_seed)
        else:
            tasks = datasets.load_hub(source, relative_to_config(cfg, r.data_dir), n, cfg.env.seed, r.choice_seed)
        if progress:
            progress(len(tasks), n)
        return tasks

    def make_env(self, tasks=()):
        return ReasoningEnv(tasks)

    @property
    def model_executor(self) -> type:
        return LLMReasoner

    def make_executor(self, config):
        return build.executor(config, HeuristicReasoner, self.model_executor)

    def make_curator(self, config, horizon: int | None = None):
        return build.curator(config, ReasoningCurator, horizon, CURATOR_SYSTEM)

    def describe(self, cfg, split: str) -> str:
        source = cfg.env.reasoning.datasets.get(split)
        if source in datasets.HUB:
            return f"{source} ({datasets.HUB[source].repo})"
        return f"{source} problems ({split})" if source else f"no problem set for {split}"

    def turns(self, cfg) -> int:
        """One answer per problem, whatever env.max_steps a household config carried into a
        cross-domain sweep says (a reasoning config is diffed against env.max_steps 1)."""
        return 1

    def group_sizes(self, cfg) -> tuple[int, int]:
        g = cfg.training.group_size
        low = cfg.env.reasoning.min_group_size
        return (min(low, g) if low and g else g), g


REASONING = Reasoning()
