"""The skill repo: SKILL.md files (Agent Skills format), an atomic store and retrieval."""

from skillos.repo.retrieval import Retriever, retrieve
from skillos.repo.skill import MAX_BODY_CHARS, Skill, parse_skill, validate_name
from skillos.repo.store import OpResult, SkillRepo, validate_path

__all__ = [
    "MAX_BODY_CHARS",
    "OpResult",
    "Retriever",
    "Skill",
    "SkillRepo",
    "parse_skill",
    "retrieve",
    "validate_name",
    "validate_path",
]
