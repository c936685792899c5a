"""Top-k retrieval over a skill repo: BM25 over name + description + body, or `shuffled`
(k skills drawn at random, seeded by the query) as a content-vs-context control."""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass

from skillos.repo.bm25 import BM25Index, top
from skillos.repo.skill import Skill
from skillos.errors import SkillosError

MODES = ("bm25", "shuffled")
_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Hit:
    skill: Skill
    score: float


class Retriever:
    """Indexes a SkillRepo (BM25, repo/bm25.py) and follows its edits: the skills a change
    touched are re-indexed, not the repo (a repo without a change log is re-indexed whole)."""

    def __init__(self, repo, mode: str):
        if mode not in MODES:
            raise ValueError(f"retrieval mode {mode!r}: choose one of {', '.join(MODES)}")
        self.repo, self.mode = repo, mode
        self._version, self._skills, self._index = None, {}, BM25Index()

    def _refresh(self):
        repo = self.repo
        if self._version == repo.version:
            return
        log = getattr(repo, "changes", None)
        if self._version is not None and log is not None and len(log) == repo.version >= self._version:
            for name in dict.fromkeys(log[self._version:]):
                self._reindex(name, repo.get(name))
        else:
            self._skills, self._index = {}, BM25Index()
            for skill in repo.skills:
                self._reindex(skill.name, skill)
        self._version = repo.version

    def _reindex(self, name: str, skill: Skill | None) -> None:
        if skill is None:
            if self._skills.pop(name, None) is not None:
                self._index.remove(name)
            return
        self._skills[name] = skill
        self._index.put(name, tokenize(skill.text))

    def search(self, query: str, k: int) -> list[Hit]:
        self._refresh()
        if not self._skills or k <= 0:
            return []
        if self.mode == "shuffled":
            seed = int.from_bytes(hashlib.sha256(query.encode()).digest()[:8], "big")
            skills = [self._skills[name] for name in sorted(self._skills)]
            picked = random.Random(seed).sample(skills, min(k, len(skills)))
            return [Hit(s, 0.0) for s in picked]
        scores, names = self._index.scores(tokenize(query))
        # A skill that shares no term with the query is not retrieved: it would only add noise.
        return [Hit(self._skills[name], score) for name, score in top(scores, names, k, order=str)]


def retrieve(repo, query: str, k: int, mode: str) -> list[Hit]:
    """One-off retrieval (builds the index each call); use Retriever in loops."""
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_K:
        raise SkillosError(f"-k {k}: must be between 0 and {MAX_K}")
    return Retriever(repo, mode).search(query, k)


MAX_K = 100  # as retrieval.top_k's bound in the config
