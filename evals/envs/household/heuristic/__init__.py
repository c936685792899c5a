"""The household's `heuristic` backend: a deterministic executor and curator that need no model.

They are honest learners: the executor knows the action grammar, reads the task sentence and
what the admissible commands reveal, and knows nothing built in about where objects are or which
steps a task needs. What it knows beyond that comes from the skills it retrieves, which the
curator wrote from what past trajectories showed (notes.py holds the two skill formats).
"""

from skillos.evals.envs.household.heuristic.curator import HeuristicCurator
from skillos.evals.envs.household.heuristic.executor import HeuristicExecutor

__all__ = ["HeuristicCurator", "HeuristicExecutor"]
