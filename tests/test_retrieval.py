import json

from conftest import run_cli
from skillos.repo import Retriever, SkillRepo, retrieve


def small_repo(root=None):
    repo = SkillRepo(root)
    repo.insert("where-to-find-apple", "Where an apple was found.", "fridge 5 times, countertop 2")
    repo.insert("clean-some-x", "How to clean an object before placing it.", "go to sinkbasin; clean")
    repo.insert("heat-some-x", "How to heat an object.", "go to microwave; heat the object")
    repo.insert("where-to-find-mug", "Where a mug was found.", "coffeemachine, cabinet")
    return repo


def test_bm25_ranks_the_matching_skills_first():
    hits = retrieve(small_repo(), "clean some apple and put it in fridge", k=2, mode="bm25")
    assert [h.skill.name for h in hits] == ["where-to-find-apple", "clean-some-x"] or \
        [h.skill.name for h in hits] == ["clean-some-x", "where-to-find-apple"]
    assert hits[0].score >= hits[1].score > 0


def test_bm25_drops_skills_sharing_no_term():
    assert retrieve(small_repo(), "zebra giraffe", k=3, mode="bm25") == []
    names = [h.skill.name for h in retrieve(small_repo(), "heat microwave", k=5, mode="bm25")]
    assert names == ["heat-some-x"]


def test_retriever_reindexes_after_a_change():
    repo = small_repo()
    retriever = Retriever(repo, "bm25")
    assert retriever.search("banana", 3) == []
    repo.insert("where-to-find-banana", "Where a banana was found.", "bowl")
    assert [h.skill.name for h in retriever.search("banana", 3)] == ["where-to-find-banana"]


def test_shuffled_is_seeded_by_the_query():
    repo = small_repo()
    a = [h.skill.name for h in retrieve(repo, "task one", 2, "shuffled")]
    b = [h.skill.name for h in retrieve(repo, "task one", 2, "shuffled")]
    picks = {tuple(h.skill.name for h in retrieve(repo, f"task {i}", 2, "shuffled")) for i in range(20)}
    assert a == b and len(a) == 2
    assert len(picks) > 1  # different queries draw different skills


def test_cli_search_json(tmp_path):
    small_repo(tmp_path)
    result = run_cli("skills", "search", tmp_path, "where is the mug", "-k", "1", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [d["name"] for d in data] == ["where-to-find-mug"]
    missing = run_cli("skills", "search", tmp_path / "none", "x")
    assert missing.returncode == 2 and "no such skill repo" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_small_repos_still_rank_matching_skills():
    # classic Okapi idf is negative for a term in most documents; a match must still be found
    one = SkillRepo(None)
    one.insert("where-to-find-apple", "Where an apple was found.", "fridge")
    assert [h.skill.name for h in retrieve(one, "apple", 5, "bm25")] == ["where-to-find-apple"]
    two = SkillRepo(None)
    two.insert("apple-notes", "apple apple apple", "apple in the fridge")
    two.insert("pear-notes", "pear notes that mention an apple once", "bowl")
    assert [h.skill.name for h in retrieve(two, "apple", 5, "bm25")] == ["apple-notes", "pear-notes"]


def _old_scorer(skills):
    """The scorer retrieval used before the incremental index: rank-bm25's Okapi BM25 with
    Lucene's idf, every skill scored, sorted by (-score, name), positives of the top k."""
    import math

    from rank_bm25 import BM25Okapi

    from skillos.repo.retrieval import tokenize

    class LuceneBM25(BM25Okapi):
        def _calc_idf(self, nd):
            self.idf = {w: math.log(1 + (self.corpus_size - f + 0.5) / (f + 0.5)) for w, f in nd.items()}

    skills = sorted(skills, key=lambda s: s.name)
    index = LuceneBM25([tokenize(s.text) for s in skills])

    def ranking(query, k):
        ranked = sorted(zip(skills, index.get_scores(tokenize(query))), key=lambda pair: (-pair[1], pair[0].name))
        return [(s.name, float(score)) for s, score in ranked[:k] if score > 0]

    return ranking


def test_rankings_and_scores_equal_the_old_scorer_through_edits():
    import hashlib
    import random

    from skillos.repo import Retriever, SkillRepo

    rng = random.Random(int.from_bytes(hashlib.sha256(b"bm25-corpus").digest()[:8], "big"))
    common = ["the", "a", "to", "of", "and", "in", "it", "then"]  # in most skills: low idf
    words = common * 6 + [f"w{i}" for i in range(150)]
    text = lambda n: " ".join(rng.choice(words) for _ in range(n))  # noqa: E731
    repo = SkillRepo(None)
    for i in range(300):
        repo.insert(f"skill-{i:03d}", text(rng.randint(3, 12)), text(rng.randint(0, 60)))
    queries = [text(rng.randint(1, 9)) for _ in range(40)] + ["the the a", "w3 w3 w7", "nothing-matches"]
    retriever = Retriever(repo, "bm25")
    for round_ in range(4):
        old = _old_scorer(repo.skills)
        for query in queries:
            got = [(h.skill.name, h.score) for h in retriever.search(query, 5)]
            assert got == old(query, 5), (round_, query)
        for i in rng.sample(range(300), 25):  # edits between rounds, as a curator makes them
            name = f"skill-{i:03d}"
            if name not in repo:
                repo.insert(name, text(4), text(20))
            elif i % 3 == 0:
                repo.delete(name)
            else:
                repo.update(name, body=text(rng.randint(0, 40)))
    retriever.search("the", 1)  # the last round's edits, followed
    assert len(retriever._index) == len(repo) == len(retriever._skills)
