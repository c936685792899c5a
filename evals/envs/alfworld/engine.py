"""Fast paths for the stock TextWorld PDDL engine: memoize five pure functions, and sort facts
by a precomputed key.

Profiling the stock engine on ALFRED rooms shows ~98% of a step is Python text generation (the
grammar's rule strings are re-parsed with tatsu for every admissible command on every step, and
a context is deep-copied per symbol) and ~98% of a reset is fast-downward's PDDL->SAS
translation, run twice per reset; loading a game parses its grammar with tatsu (~20 ms of a
~30 ms load and reset: every slate and curator rollout loads its game again). The
five functions below are pure in what they return, so we cache them (translations also on disk,
see _translate_via_disk). Once they are cached, sorting
sets of facts with a Python-level `__lt__` per comparison is the largest cost; `textworld.logic`
gets a `sorted` that sorts facts by a precomputed key into the same order. Nothing about the game
logic changes: `tests/test_alfworld_games.py` replays the same commands through the stock and the
fast engine and requires byte-identical observations and admissible-command lists, and
`tests/benchmarks/bench_alfworld_engine.py` prints the speed ratio.
"""

from __future__ import annotations

import builtins
import copy
import functools
import hashlib
import os
import pickle
import zlib
from pathlib import Path

from skillos.files import write_atomic

_ORIGINALS: dict = {}
# Bounded: a pool of hundreds of games must not grow memory without limit.
PARSE_CACHE_SIZE = 1 << 16
SAS_CACHE_SIZE = 256  # two translations per game: ~128 games stay warm
# one parsed grammar per game (each its own: the task is in it), ~210 KB each: the paper's 134 held-out
# games stay warm from one arm to the next (an LRU smaller than a pool played in order never hits)
LOGIC_CACHE_SIZE = 256
SAS_FORMAT = "sas-pickle-zlib/1"


def cache_root() -> Path:
    """Where generated games and translations are cached ($SKILLOS_CACHE, else ~/.cache/skillos)."""
    return Path(os.environ.get("SKILLOS_CACHE", Path.home() / ".cache" / "skillos")) / "alfworld"


def _sas_path(domain: str, problem: str, optimize: bool) -> Path:
    from importlib.metadata import version as dist_version

    version = dist_version("fast-downward-textworld")
    key = hashlib.sha256(f"{SAS_FORMAT}|{version}|{optimize}|{domain}|{problem}".encode()).hexdigest()
    return cache_root() / "sas" / key[:2] / f"{key}.bin"


def _translate_via_disk(pddl2sas, domain, problem, verbose, optimize):
    """fast-downward's translation is ~0.6 s per call and runs twice per new game; keep its
    result on disk (zlib'd pickle, written atomically) so a later process skips it. The cache
    holds only what this machine's own translator produced."""
    path = _sas_path(domain, problem, optimize)
    if path.is_file():
        try:
            return pickle.loads(zlib.decompress(path.read_bytes()))
        except Exception:  # noqa: BLE001 - a damaged cache entry is recomputed
            pass
    result = pddl2sas(domain, problem, verbose=verbose, optimize=optimize)
    try:
        write_atomic(path, zlib.compress(pickle.dumps(result), 1))
    except OSError:
        pass  # a read-only cache only costs speed
    return result


def _modules():
    import fast_downward
    import textworld.envs.pddl.logic as game_logic
    import textworld.envs.pddl.textgen as textgen
    import textworld.logic as logic

    return fast_downward, textgen, logic, game_logic


def _copies(parse, size: int):
    """`parse` memoized on its arguments (the last `size` kept), each caller handed a deep copy of
    the cached result: callers change what they get."""
    @functools.lru_cache(maxsize=size)
    def parsed(args, kwargs):
        return parse(*args, **dict(kwargs))

    def copied(*args, **kwargs):
        return copy.deepcopy(parsed(args, tuple(sorted(kwargs.items()))))
    return copied


def enabled() -> bool:
    return bool(_ORIGINALS)


def enable() -> None:
    """Install the fast paths (idempotent)."""
    if _ORIGINALS:
        return
    fast_downward, textgen, logic, game_logic = _modules()
    Rule, Proposition = logic.Rule, logic.Proposition
    _ORIGINALS.update(
        parse_query=Rule.__dict__["parse_conjunctive_query"],
        parse_and_convert=textgen._parse_and_convert,
        parse_game=game_logic._parse_and_convert,
        copy_context=textgen.copy_context,
        pddl2sas=fast_downward.pddl2sas,
        logic_sorted=logic.__dict__.get("sorted"),
    )
    parse_query = _ORIGINALS["parse_query"].__func__

    @functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
    def cached_query(cls, expr):
        return parse_query(cls, expr)  # Rules from a query are read, never mutated

    # Callers set .context on the returned symbols: hand out a copy of the cached parse.
    cached_parse_and_convert = _copies(_ORIGINALS["parse_and_convert"], PARSE_CACHE_SIZE)

    def shallow_copy_context(context):
        # The stock version deep-copies variables and mapping; both are only ever updated
        # (never mutated in place), so copies of the two dicts are equivalent.
        return {
            "state": context["state"],
            "facts": context["facts"],
            "variables": dict(context["variables"]),
            "mapping": dict(context["mapping"]),
            "entity_infos": context["entity_infos"],
        }

    # A game's grammar (GameLogic, at every load): parsed once (~20 ms), handed out as a copy
    # (~2 ms), since GameLogic keeps the actions and grammar it is given and play may change them.
    cached_parse_game = _copies(_ORIGINALS["parse_game"], LOGIC_CACHE_SIZE)

    pddl2sas = _ORIGINALS["pddl2sas"]

    @functools.lru_cache(maxsize=SAS_CACHE_SIZE)
    def cached_pddl2sas(domain, problem, verbose=False, optimize=False):
        return _translate_via_disk(pddl2sas, domain, problem, verbose, optimize)

    def fact_key(fact):
        # Proposition orders by (name, arguments) and a Variable by (name, type)
        return fact.name, tuple([(v.name, v.type) for v in fact.arguments])

    def sorted_facts(iterable, /, *, key=None, reverse=False):
        # textworld.logic sorts sets of facts on every step, each comparison a Python-level
        # __lt__; sorting by a precomputed key gives the same order in a fraction of the time.
        items = list(iterable)
        if key is None and items and {type(x) for x in items} == {Proposition}:
            key = fact_key
        return builtins.sorted(items, key=key, reverse=reverse)

    Rule.parse_conjunctive_query = classmethod(cached_query)
    logic.sorted = sorted_facts
    textgen._parse_and_convert = cached_parse_and_convert
    textgen.copy_context = shallow_copy_context
    game_logic._parse_and_convert = cached_parse_game
    fast_downward.pddl2sas = cached_pddl2sas


def disable() -> None:
    """Restore the stock engine exactly (used by the equivalence test and the benchmark)."""
    if not _ORIGINALS:
        return
    fast_downward, textgen, logic, game_logic = _modules()
    logic.Rule.parse_conjunctive_query = _ORIGINALS["parse_query"]
    if _ORIGINALS["logic_sorted"] is None:
        del logic.sorted
    else:
        logic.sorted = _ORIGINALS["logic_sorted"]
    textgen._parse_and_convert = _ORIGINALS["parse_and_convert"]
    textgen.copy_context = _ORIGINALS["copy_context"]
    game_logic._parse_and_convert = _ORIGINALS["parse_game"]
    fast_downward.pddl2sas = _ORIGINALS["pddl2sas"]
    _ORIGINALS.clear()
