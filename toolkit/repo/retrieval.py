"""Top-k retrieval over a skill repo: BM25 over name + description + body, or `shuffled`
(k skills drawn at random, seeded by the query) as a content-vs-context control."""

from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass

from rank_bm25 import BM25Okapi

from skillos.repo.skill import Skill

MODES = ("bm25", "shuffled")
_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class _BM25(BM25Okapi):
    """Okapi BM25 with Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5)), which is never negative.

    rank-bm25's classic idf goes negative for a term in more than half the skills, so in a small
    repo a skill matching the query could score below one that does not match at all.
    """

    def _calc_idf(self, nd):
        self.idf = {word: math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
                    for word, freq in nd.items()}


@dataclass(frozen=True)
class Hit:
    skill: Skill
    score: float


class Retriever:
    """Indexes a SkillRepo and re-indexes only when the repo's version changes."""

    def __init__(self, repo, mode: str):
        if mode not in MODES:
            raise ValueError(f"retrieval mode {mode!r}: choose one of {', '.join(MODES)}")
        self.repo, self.mode = repo, mode
        self._version, self._skills, self._index = None, [], None

    def _refresh(self):
        if self._version != self.repo.version or self._index is None and self._skills:
            self._skills = self.repo.skills
            self._index = _BM25([tokenize(s.text) for s in self._skills]) if self._skills else None
            self._version = self.repo.version

    def search(self, query: str, k: int) -> list[Hit]:
        self._refresh()
        if not self._skills or k <= 0:
            return []
        if self.mode == "shuffled":
            seed = int.from_bytes(hashlib.sha256(query.encode()).digest()[:8], "big")
            picked = random.Random(seed).sample(self._skills, min(k, len(self._skills)))
            return [Hit(s, 0.0) for s in picked]
        scores = self._index.get_scores(tokenize(query))
        ranked = sorted(zip(self._skills, scores), key=lambda pair: (-pair[1], pair[0].name))
        # A skill that shares no term with the query is not retrieved: it would only add noise.
        return [Hit(s, float(score)) for s, score in ranked[:k] if score > 0]


def retrieve(repo, query: str, k: int, mode: str) -> list[Hit]:
    """One-off retrieval (builds the index each call); use Retriever in loops."""
    return Retriever(repo, mode).search(query, k)
