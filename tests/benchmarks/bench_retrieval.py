"""BM25 retrieval at 1,000 and 10,000 skills: p50 query time and the time to follow one curator
edit, for the incremental index (toolkit/repo/bm25.py) beside the scorer it replaced (rank-bm25
with Lucene's idf, re-indexed whole after every edit), measured in the same run. Targets:
<= 1 ms p50 at 1,000 skills, <= 5 ms at 10,000, an edit's update independent of the repo size.

Run by hand: `python tests/benchmarks/bench_retrieval.py`. The corpus is seeded: skill-shaped
texts (a description and a ~60-word body) over a household vocabulary with common words.
"""

import hashlib
import math
import random
import statistics
import sys
import time

from rank_bm25 import BM25Okapi

from skillos.repo import Retriever, SkillRepo
from skillos.repo.retrieval import tokenize

VERBS = "take put open close go clean heat cool slice examine use toggle find look check".split()
THINGS = ("mug apple knife fridge microwave sinkbasin countertop cabinet drawer shelf desklamp book pencil "
          "potato egg lettuce tomato bowl plate cup pan pot spatula towel soapbar cloth vase keychain").split()
COMMON = "the a to of and in it then first each with on from".split()
TASKS = ["put a clean mug in the coffeemachine", "heat an apple and put it on the countertop",
         "examine the book with the desklamp", "put two pencils in the drawer", "cool a potato and put it in the fridge"]


class LuceneBM25(BM25Okapi):
    def _calc_idf(self, nd):
        self.idf = {w: math.log(1 + (self.corpus_size - f + 0.5) / (f + 0.5)) for w, f in nd.items()}


def corpus(n: int, rng: random.Random) -> SkillRepo:
    words = VERBS * 2 + THINGS + COMMON * 4
    repo = SkillRepo(None)
    for i in range(n):
        description = " ".join(rng.choice(words) for _ in range(10))
        body = " ".join(rng.choice(words) for _ in range(60))
        repo.insert(f"skill-{i:05d}", description, body)
    return repo


def p50(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main():
    rng = random.Random(int.from_bytes(hashlib.sha256(b"bench-retrieval").digest()[:8], "big"))
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000]  # `bench_retrieval.py 200`: a quick run
    for n in sizes:
        target = 1.0 if n <= 1000 else 5.0
        repo = corpus(n, rng)
        retriever = Retriever(repo, "bm25")
        retriever.search(TASKS[0], 5)
        queries = iter(TASKS * 1000)
        new = p50(lambda: retriever.search(next(queries), 5), 200)
        skills = repo.skills
        old_index = LuceneBM25([tokenize(s.text) for s in skills])

        def old_search():
            scores = old_index.get_scores(tokenize(next(queries)))
            sorted(zip(skills, scores), key=lambda pair: (-pair[1], pair[0].name))[:5]

        old = p50(old_search, 20 if n > 1000 else 100)
        old_update = p50(lambda: LuceneBM25([tokenize(s.text) for s in repo.skills]), 3)
        edits = iter(range(10**6))

        def edit_and_follow():
            i = next(edits)
            repo.update(f"skill-{i % n:05d}", body=" ".join(rng.choice(THINGS) for _ in range(60)))
            retriever._refresh()

        new_update = p50(edit_and_follow, 50)
        print(f"{n:6d} skills: query p50 {new:.3f} ms (target <= {target:g} ms -> {new / target:.2f} of it; "
              f"old scorer {old:.2f} ms, {old / new:.0f}x); one edit followed in {new_update:.3f} ms "
              f"(old re-index {old_update:.0f} ms, {old_update / new_update:.0f}x)")


if __name__ == "__main__":
    main()
