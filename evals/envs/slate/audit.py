"""Can a slate be solved from its listing alone? A listing audit of frozen slates.

A selector is trained to choose what to read from names and descriptions; if the oracle is the
listing's best keyword match for the task sentence, a matcher that never reads a body picks it,
and a trained selector may learn nothing but that. The method's misleading skills are plausible
for the task, so a matcher over the listing should pick the oracle about as often as chance
among the skills that look right (one oracle and n misleading: 1 in n + 1).

Two matchers, each over one slate's listing lines (`name: description`) with the game's task
sentence as the query: Okapi BM25 (the repo's own index, repo/bm25.py, with the slate as its
corpus) and keyword overlap (distinct content words shared with the task sentence). A tie at the
top shares the pick: k skills tied with the oracle give it 1/k. Every share has its denominator.
"""

from __future__ import annotations

from skillos.evals.envs.slate.skills import CATEGORIES
from skillos.repo.bm25 import BM25Index
from skillos.repo.retrieval import tokenize

MATCHERS = ("bm25", "keyword")
# The share of slates whose oracle a listing matcher may pick and still count as not giving it away
# (about chance among an oracle and four or five misleading skills that look as right).
BAR = 0.2
# Function words a keyword matcher ignores (BM25 weighs them by idf over the slate instead).
STOPWORDS = frozenset("a an and at for from in into it its of on or some the them then to under with".split())


def _scores(matcher: str, docs: list[list[str]], query: list[str]) -> list[float]:
    if matcher == "bm25":
        index = BM25Index()
        for i, tokens in enumerate(docs):
            index.put(i, tokens)
        scores, keys = index.scores(query)
        by_key = {k: float(s) for k, s in zip(keys, scores) if k is not None}
        return [by_key[i] for i in range(len(docs))]
    words = set(query) - STOPWORDS
    return [float(len(words & set(tokens))) for tokens in docs]


def top_shares(matcher: str, slate, repo, task: str) -> dict[str, float]:
    """How a matcher's pick on one slate falls over the categories (sums to 1; ties share)."""
    skills = [repo.get(name) for name in slate.order]
    scores = _scores(matcher, [tokenize(f"{s.name} {s.description}") for s in skills], tokenize(task))
    best = max(scores)
    tied = [s.name for s, score in zip(skills, scores) if score == best]
    shares = dict.fromkeys(CATEGORIES, 0.0)
    for name in tied:
        shares[slate.role(name)] += 1 / len(tied)
    return shares


def listing_audit(repo, slates, tasks: dict[str, str]) -> dict:
    """{matcher: {category: {value, n, of}}, bar, passes, why}: for each matcher, the share of
    slates whose top listing match is each category (`n` counts tied picks fractionally, `of` the
    slates audited). `tasks` maps game id to task sentence; a slate without one is not audited,
    and with none the audit is unmeasured (None + reason)."""
    audited = [s for s in slates if tasks.get(s.game_id)]
    if not audited:
        return {"slates": 0, "bar": BAR, "passes": None, "why": "no task sentences to match the listings against"}
    out: dict = {"slates": len(audited), "of": len(slates), "bar": BAR}
    for matcher in MATCHERS:
        totals = dict.fromkeys(CATEGORIES, 0.0)
        for slate in audited:
            for category, share in top_shares(matcher, slate, repo, tasks[slate.game_id]).items():
                totals[category] += share
        out[matcher] = {c: {"value": totals[c] / len(audited), "n": round(totals[c], 3), "of": len(audited)}
                        for c in CATEGORIES}
    out["passes"] = all(out[m]["oracle"]["value"] <= BAR for m in MATCHERS)
    out["why"] = (f"a listing matcher picks the oracle in at most {BAR:.0%} of slates" if out["passes"] else
                  "a matcher over names and descriptions alone picks the oracle in more than "
                  f"{BAR:.0%} of slates: selection can be solved without reading")
    return out


def render(audit: dict) -> str:
    """One line: each matcher's oracle picks with denominators."""
    if not audit.get("slates"):
        return f"listing audit: unmeasured ({audit['why']})"
    n = audit["slates"]
    parts = [f"{m} picks the oracle {audit[m]['oracle']['n']:g}/{n} ({audit[m]['oracle']['value']:.0%}), "
             f"a misleading skill {audit[m]['misleading']['n']:g}/{n}" for m in MATCHERS]
    return f"listing audit ({audit['slates']} of {audit['of']} slates, bar {BAR:.0%}): " + "; ".join(parts)
