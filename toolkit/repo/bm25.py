"""An incremental Okapi BM25 index with Lucene's idf: postings per term, updated per edit.

Okapi BM25 (k1 1.5, b 0.75, rank-bm25's defaults) with Lucene's idf log(1 + (N - n + 0.5) /
(n + 0.5)), which is never negative (the classic idf goes negative for a term in more than half
the skills, so in a small repo a matching skill could score below one that matches nothing).

Why not a library: rank-bm25 scores every document for every query term in Python (57 ms at
10,000 skills) and rebuilds on every edit; bm25s precomputes a static sparse matrix that cannot
take an added or removed document (xhluca/bm25s#5: "not possible", since N and the average
length enter every score). A curator edits the repo between games, so the index must follow
edits. Here idf and the length norm are computed at query time from counts kept up to date,
so an edit touches only its own terms, and a query touches only the postings of its terms
(numpy over those documents). Scores are the same float operations in the same order as
rank-bm25's `get_scores` (a term's contribution summed in query order; absent terms add an
exact 0.0), so rankings and scores are identical to the scorer this replaces
(tests/test_retrieval.py compares them on a corpus).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

K1, B = 1.5, 0.75


class BM25Index:
    """Documents by key (any hashable); `put(key, tokens)`, `remove(key)`, `scores(tokens)`."""

    def __init__(self):
        self._slot: dict = {}  # key -> slot
        self._keys: list = []  # slot -> key (None when free)
        self._free: list[int] = []
        self._doc_len = np.zeros(0)
        self._terms: dict[int, Counter] = {}  # slot -> its term counts
        self._postings: dict[str, dict[int, int]] = {}  # term -> {slot: tf}
        self._arrays: dict[str, tuple] = {}  # term -> (slots, tfs) as arrays, rebuilt when it changes
        self._total_len = 0

    def __len__(self) -> int:
        return len(self._slot)

    def put(self, key, tokens: list[str]) -> None:
        """Add a document, or replace the one under `key`: work in its old and new terms only."""
        if key in self._slot:
            self.remove(key)
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self._keys)
            self._keys.append(None)
            if slot >= len(self._doc_len):
                self._doc_len = np.concatenate([self._doc_len, np.zeros(max(16, len(self._doc_len)))])
        self._slot[key], self._keys[slot] = slot, key
        counts = Counter(tokens)
        self._terms[slot] = counts
        self._doc_len[slot] = len(tokens)
        self._total_len += len(tokens)
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[slot] = tf
            self._arrays.pop(term, None)

    def remove(self, key) -> None:
        slot = self._slot.pop(key)
        for term in self._terms.pop(slot):
            postings = self._postings[term]
            del postings[slot]
            if not postings:
                del self._postings[term]
            self._arrays.pop(term, None)
        self._total_len -= int(self._doc_len[slot])
        self._doc_len[slot] = 0
        self._keys[slot] = None
        self._free.append(slot)

    def scores(self, tokens: list[str]) -> tuple[np.ndarray, list]:
        """(score per slot, key per slot); a free slot or a document sharing no term scores 0."""
        n_docs = len(self._slot)
        score = np.zeros(len(self._keys))
        if not n_docs:
            return score, self._keys
        avgdl = self._total_len / n_docs
        for term in tokens:
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = math.log(1 + (n_docs - len(postings) + 0.5) / (len(postings) + 0.5))
            slots, tf = self._term_arrays(term, postings)
            doc_len = self._doc_len[slots]
            score[slots] += idf * (tf * (K1 + 1) / (tf + K1 * (1 - B + B * doc_len / avgdl)))
        return score, self._keys

    def _term_arrays(self, term: str, postings: dict):
        arrays = self._arrays.get(term)
        if arrays is None:
            arrays = self._arrays[term] = (np.fromiter(postings.keys(), dtype=np.intp, count=len(postings)),
                                           np.fromiter(postings.values(), dtype=np.float64, count=len(postings)))
        return arrays


def top(score: np.ndarray, keys: list, k: int, order) -> list[tuple]:
    """The k best (key, score) with score > 0, ties broken by `order(key)`, best first."""
    positive = np.flatnonzero(score > 0)
    if len(positive) > k:  # keep every slot tied with the k-th best, then sort those few
        kth = np.partition(score[positive], len(positive) - k)[len(positive) - k]
        positive = positive[score[positive] >= kth]
    ranked = sorted(((keys[i], float(score[i])) for i in positive), key=lambda pair: (-pair[1], order(pair[0])))
    return ranked[:k]
