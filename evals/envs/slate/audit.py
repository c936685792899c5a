"""Can a slate be solved from its listing alone? A listing audit of frozen slates.

A selector is trained to choose what to read from names and descriptions; if the oracle is the
listing's best match for the task, a rule that never reads a body picks it, and a trained
selector may learn nothing but that. The method's misleading skills are plausible for the task,
so a rule over the listing should pick the oracle about as often as chance among the skills that
look right (one oracle and n misleading: 1 in n + 1).

Four rules, each over one slate's listing lines (`name: description`): Okapi BM25 (the repo's
own index, repo/bm25.py, with the slate as its corpus) and keyword overlap (distinct content
words shared), each with the game's task sentence as the query; the scene-text rule, keyword
overlap with the task sentence and what the room's scene text lists (its receptacles: the
microwave, fridge or sinkbasin a heat, cool or clean task uses is named there, so a listing that
alone names the task's verb and the room's appliance gives the oracle away); and the name rule,
which reads no text at all: it picks the listed name most often the oracle on the other half's
slates (a name that is the oracle's by rote, in training and held-out alike, is found by it).
Two rules read the listing's structure, not the task: the repeat rule picks the description
listed most often on the slate, and the center rule the description with the most words in
common with the others (Jaccard, averaged): where each misleading listing is one edit from the
oracle's, or keeps its line while another does not, the oracle is their center and these find
it. A tie at the top shares the pick: k skills tied with the oracle give it 1/k. Every share has
its denominator; a rule with nothing to read is unmeasured.
"""

from __future__ import annotations

import math
from collections import Counter

from skillos.evals.envs.slate.skills import CATEGORIES
from skillos.evals.stats import binomial_tail
from skillos.repo.bm25 import BM25Index
from skillos.repo.retrieval import tokenize

MATCHERS = ("bm25", "keyword", "scene", "name", "repeat", "center")
# The share of slates whose oracle a listing matcher may pick and still count as not giving it away
# (about chance among an oracle and four or five misleading skills that look as right).
BAR = 0.2
# A rule fails the audit when its oracle share is above BAR by more than chance variation over
# its slates would allow at this level (a 10-slate audit varies by 10 points from one pick).
ALPHA = 0.05
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


def _shares(slate, scores: list[float]) -> dict[str, float]:
    best = max(scores)
    tied = [name for name, score in zip(slate.order, scores) if score == best]
    shares = dict.fromkeys(CATEGORIES, 0.0)
    for name in tied:
        shares[slate.role(name)] += 1 / len(tied)
    return shares


def top_shares(matcher: str, slate, repo, query: str | list) -> dict[str, float]:
    """How a lexical matcher's pick on one slate falls over the categories (sums to 1; ties
    share). `query`: the task sentence, or its words and those its scene lists."""
    docs = [tokenize(f"{s.name} {s.description}") for s in slate.skills(repo)]
    words = tokenize(query) if isinstance(query, str) else [w.lower() for w in query]
    return _shares(slate, _scores(matcher, docs, words))


def structure_shares(rule: str, slate, repo) -> dict[str, float]:
    """The repeat or center rule's pick on one slate, from its descriptions alone."""
    lines = [" ".join(tokenize(s.description)) for s in slate.skills(repo)]
    if rule == "repeat":
        return _shares(slate, [float(lines.count(line)) for line in lines])
    words = [set(line.split()) - STOPWORDS for line in lines]

    def similarity(a: set, b: set) -> float:
        return len(a & b) / len(a | b) if a | b else 1.0

    # rounded: identical lines summed in another order differ in their last bits, and a tie is shared
    return _shares(slate, [round(math.fsum(similarity(w, other) for j, other in enumerate(words) if j != i)
                                 / max(1, len(words) - 1), 9) for i, w in enumerate(words)])


def name_shares(slate, learned_on) -> dict[str, float]:
    """The name rule's pick on `slate`: each listed name scored by the share of the slates it
    `learned_on` that list it with it as the oracle."""
    listed, oracle = Counter(), Counter()
    for other in learned_on:
        listed.update(other.order)
        oracle[other.oracle] += 1
    return _shares(slate, [oracle[n] / listed[n] if listed[n] else 0.0 for n in slate.order])


def _cross_fitted(slates) -> list[dict]:
    """The name rule on the slates whose task type the other half holds, learned on that half
    (alternate slates of each type): as a rule learned on training slates meets held-out ones,
    each half is judged by what the other taught, so the picks are independent of the slates
    they are judged on."""
    seen: Counter = Counter()
    half = []
    for slate in slates:  # alternate within each task type, so both halves hold every type
        half.append(seen[slate.task_type] % 2)
        seen[slate.task_type] += 1
    halves = ([s for s, h in zip(slates, half) if h == 0], [s for s, h in zip(slates, half) if h == 1])
    taught = [{s.task_type for s in halves[0]}, {s.task_type for s in halves[1]}]
    # a slate whose type the other half lacks would be judged by a rule that learned nothing
    return [name_shares(s, halves[1 - h]) for s, h in zip(slates, half) if s.task_type in taught[1 - h]]


def _exceeds_bar(row: dict, alpha: float) -> bool:
    """Whether the oracle share is above BAR by more than chance variation (one-sided exact
    binomial at `alpha`, the fractional ties' count rounded)."""
    return binomial_tail(math.floor(row["n"] + 0.5), row["of"], BAR) < alpha


def _tally(picks: list[dict], of: int) -> dict:
    totals = {c: sum(p[c] for p in picks) for c in CATEGORIES}
    return {c: {"value": totals[c] / of, "n": round(totals[c], 3), "of": of} for c in CATEGORIES}


def listing_audit(repo, slates, tasks: dict[str, str], scenes: dict | None = None) -> dict:
    """{matcher: {category: {value, n, of}}, bar, passes, why}: for each rule, the share of
    slates whose top listing match is each category (`n` counts tied picks fractionally, `of` the
    slates audited). `tasks` maps game id to task sentence; a slate without one is not audited,
    and with none the audit is unmeasured (None + reason). `scenes` maps game id to the words its
    room's scene text lists; without them the scene rule is unmeasured (None + reason) and the
    verdict stands on the other rules."""
    audited = [s for s in slates if tasks.get(s.game_id)]
    if not audited:
        return {"slates": 0, "bar": BAR, "passes": None, "why": "no task sentences to match the listings against"}
    out: dict = {"slates": len(audited), "of": len(slates), "bar": BAR}
    for matcher in ("bm25", "keyword"):
        out[matcher] = _tally([top_shares(matcher, s, repo, tasks[s.game_id]) for s in audited], len(audited))
    seen = [s for s in audited if (scenes or {}).get(s.game_id)]
    out["scene"] = (_tally([top_shares("keyword", s, repo, [*tokenize(tasks[s.game_id]), *scenes[s.game_id]])
                            for s in seen], len(seen)) if seen
                    else {"value": None, "of": 0, "reason": "no scene texts of these games to read"})
    for rule in ("repeat", "center"):
        out[rule] = _tally([structure_shares(rule, s, repo) for s in audited], len(audited))
    named = _cross_fitted(audited)
    out["name"] = (_tally(named, len(named)) if named else
                   {"value": None, "of": 0, "reason": "no task type has a slate in both halves to learn names from"})
    measured = [m for m in MATCHERS if "oracle" in out[m]]
    over = [m for m in measured if _exceeds_bar(out[m]["oracle"], ALPHA)]
    out["passes"] = not over
    out["why"] = (f"no listing rule picks the oracle in more than {BAR:.0%} of slates beyond chance variation "
                  f"(one-sided exact binomial, alpha {ALPHA})" if not over else
                  f"a rule over the listing alone ({', '.join(over)}) picks the oracle in more than {BAR:.0%} of slates, "
                  f"beyond chance variation at alpha {ALPHA}: selection can be solved without reading")
    return out


def render(audit: dict) -> str:
    """One line: each rule's oracle picks with denominators."""
    if not audit.get("slates"):
        return f"listing audit: unmeasured ({audit['why']})"

    def part(m):
        row = audit.get(m) or {"reason": "not measured by this snapshot's skillos"}
        if "oracle" not in row:
            return f"{m} unmeasured ({row['reason']})"
        return (f"{m} picks the oracle {row['oracle']['n']:g}/{row['oracle']['of']} ({row['oracle']['value']:.0%}), "
                f"a misleading skill {row['misleading']['n']:g}/{row['misleading']['of']}")

    return (f"listing audit ({audit['slates']} of {audit['of']} slates, bar {BAR:.0%}): "
            + "; ".join(part(m) for m in MATCHERS))
