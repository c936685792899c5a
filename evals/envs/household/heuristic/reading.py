"""Reading what a skill says, in plain English, for the heuristic executor.

A skill written by a person, an LLM curator, a trained checkpoint or the heuristic curator is
read with one small grammar over ALFWorld's own words, never through one writer's layout:

* **Nouns** are ALFWorld's object and receptacle types, read from the `alfworld` wheel
  (`constants.OBJECTS`): as one word (`sinkbasin`), split at its capitals (`sink basin`), in the
  plural (`knives`, `shelves`), and a short table of everyday names (`refrigerator` -> fridge,
  `sink` -> sinkbasin, `lamp` -> desklamp or floorlamp, `table` -> any table). `X`, "it",
  "them", "the object", "the item" stand for the task's object; `Y`, "the target",
  "the destination" for the place the task names.
* **Verbs** are ALFWorld's commands (take, go to, put/move, open, heat/cool/clean ... with, use,
  examine) with everyday synonyms and inflections ("pick up", "grab", "warm", "chill",
  "refrigerate", "wash", "rinse", "turn on", "place", "bring", "microwave it", ...). After an
  article or "is/are/usually" a verb is a state or a passive ("a hot apple", "apples are
  usually placed on ..."), not an instruction. Every instruction starts a phrase; the nouns up
  to the next one are its arguments. A receptacle named by a put/use/go phrase next to a
  heat/cool/clean with none is its tool ("put it in the microwave to heat it", "go to the sink.
  Wash it.").
* **Order**: sentences, list items and numbered steps are read in order, headings anywhere;
  "then", "next", "after that" keep it; "before B, A", "B after A", "B only after A", "B once A"
  put A first. What a body says to use or avoid for a look task stands over its description's.
* **Negation** ("don't", "never", "avoid", "did not work", "failed") turns a tool into one to
  avoid, a place into one where the object is not, and an order ("do not put it in Y before
  heating it") into its opposite.
* **Where things are**: in a sentence that locates (found, usually, often, kept, look in,
  search, check, is/are in/on, from ...) and a markdown table row, each receptacle belongs to the
  objects named last before it, else to the objects the skill's name, description or title is
  about. Counts ("3 of 5", a `| place | found | searched |` row) rank by the found share;
  otherwise the order of mention ranks, and "rarely"/"never"/"0 of 12" put a place last.

What one task takes from its skills (`guidance`) is only what concerns it: the tool and order of
the transformation the task asks for (heat, cool, clean, or a lamp to look under) and where its
object or lamp is. A skill about something else changes nothing.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from skillos.evals.envs.alfworld.scenes import constants
from skillos.evals.envs.alfworld.text import parse_goal

OBJ, TARGET = "X", "Y"  # the task's object and the place it names, in a reading
TRANSFORMS = ("heat", "cool", "clean")
NOTHING_SAID = 0.5  # the score of a place no skill mentions

# -- nouns --------------------------------------------------------------------------------------
# Everyday names the game's own types do not spell; a value may name several types.
SYNONYMS = {
    "refrigerator": ("fridge",), "freezer": ("fridge",), "icebox": ("fridge",),
    "sink": ("sinkbasin",), "basin": ("sinkbasin",), "washbasin": ("sinkbasin",),
    "counter": ("countertop",), "worktop": ("countertop",), "stove": ("stoveburner",),
    "burner": ("stoveburner",), "hob": ("stoveburner",), "cooktop": ("stoveburner",),
    "cupboard": ("cabinet",), "bookshelf": ("shelf",), "bookcase": ("shelf",),
    "nightstand": ("sidetable",), "endtable": ("sidetable",), "trash": ("garbagecan",),
    "trashcan": ("garbagecan",), "bin": ("garbagecan",), "wastebasket": ("garbagecan",),
    "couch": ("sofa",), "settee": ("sofa",), "tub": ("bathtubbasin",), "bathtub": ("bathtubbasin",),
    "lamp": ("desklamp", "floorlamp"), "light": ("desklamp", "floorlamp"),
    "table": ("diningtable", "sidetable", "coffeetable"), "phone": ("cellphone",),
    "remote": ("remotecontrol",), "key": ("keychain",), "tissues": ("tissuebox",),
    "sponge": ("dishsponge",), "plant": ("houseplant",), "tv": ("television",),
    "racket": ("tennisracket",), "bat": ("baseballbat",), "coffeemaker": ("coffeemachine",),
}
PHRASES = {("coffee", "maker"): "coffeemaker", ("night", "stand"): "nightstand",
           ("end", "table"): "endtable", ("trash", "can"): "trashcan", ("waste", "basket"): "wastebasket",
           ("glass", "bottle"): "glassbottle", ("wash", "basin"): "washbasin",
           ("microwave", "oven"): "microwave", ("book", "shelf"): "bookshelf", ("book", "case"): "bookcase"}


def _plurals(word: str) -> set[str]:
    forms = {word + "s"}
    if word.endswith(("s", "x", "ch", "sh", "o")):
        forms.add(word + "es")
    if word.endswith("fe"):
        forms.add(word[:-2] + "ves")
    elif word.endswith("f"):
        forms.add(word[:-1] + "ves")
    return forms


@functools.lru_cache(maxsize=1)
def vocabulary() -> tuple[dict, dict, frozenset]:
    """(words, phrases, places): one word -> the types it names; a tuple of words -> one word;
    the receptacle types that stand in a room (what a place in a skill can be)."""
    c = constants()
    words: dict[str, tuple] = {}
    phrases: dict[tuple, str] = dict(PHRASES)
    for camel in c.OBJECTS:
        kind = camel.lower()
        parts = [p.lower() for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z]*", camel)]
        for form in {kind} | _plurals(kind):
            words.setdefault(form, (kind,))
        if len(parts) > 1:
            for last in {parts[-1]} | _plurals(parts[-1]):
                phrases[tuple(parts[:-1]) + (last,)] = kind
    for word, kinds in SYNONYMS.items():  # over the game's own: its "sink" is no place to wash in
        for form in {word} | _plurals(word):
            words[form] = kinds
    places = frozenset(r.lower() for r in c.RECEPTACLES) - {r.lower() for r in c.MOVABLE_RECEPTACLES}
    return words, phrases, places


# -- verbs --------------------------------------------------------------------------------------
def _inflect(*stems: str) -> set[str]:
    out = set()
    for stem in stems:
        base = stem[:-1] if stem.endswith("e") else stem
        out |= {stem, stem + "s", stem + "es", base + "ing", base + "ed", stem + "d"}
        if re.fullmatch(r"[^aeiou]*[aeiou][bdgmnpt]", stem):  # get -> getting
            out |= {stem + stem[-1] + "ing", stem + stem[-1] + "ed"}
    return out


VERBS = {
    "take": _inflect("take", "pick", "grab", "get", "fetch", "collect", "retrieve", "obtain", "hold")
    | {"took", "taken", "got", "gotten", "held"},
    "find": _inflect("find", "locate", "search", "seek", "check", "hunt", "look", "explore", "scan")
    | {"found"},
    "go": _inflect("go", "walk", "head", "navigate", "proceed", "visit", "travel", "approach")
    | {"went", "gone"},
    "heat": _inflect("heat", "warm", "cook", "reheat"),
    "cool": _inflect("cool", "chill", "refrigerate", "freeze") | {"froze", "frozen"},
    "clean": _inflect("clean", "wash", "rinse", "scrub", "cleanse"),
    "use": _inflect("use", "toggle", "switch", "turn", "activate") | {"lit"},
    "put": _inflect("put", "place", "move", "set", "drop", "leave", "deliver", "store", "insert",
                    "bring", "carry", "return", "deposit", "stash") | {"brought", "laid", "lay"},
    "examine": _inflect("examine", "inspect", "view", "study"),
    "open": _inflect("open"),
}
STATES = {"hot": "heat", "warm": "heat", "cold": "cool", "cool": "cool", "chilled": "cool", "clean": "clean"}
VERB_OF: dict[str, str] = {}
for _op, _forms in VERBS.items():
    for _form in _forms:
        VERB_OF.setdefault(_form, _op)
for _form in ("using", "sets", "setting", "turning", "turns", "left", "holding", "looking", "opened"):
    VERB_OF.pop(_form, None)  # prepositions, nouns or states here more often than instructions
# After these words a verb is a state or a passive, not an instruction.
_STATE_BEFORE = {"a", "an", "the", "some", "is", "are", "be", "been", "was", "were", "stays", "already",
                 "still", "usually", "often", "typically", "generally", "mostly", "normally", "sometimes",
                 "commonly", "frequently", "rarely", "seldom", "being", "its", "it's", "anything",
                 "something"}
_BE = {"is", "are", "was", "were", "be", "been"}
_CLAUSE_START = {",", "then", "first", "to", "please", "next", "and then", "you", "now", "finally"}
_GENERIC = {"task", "tasks", "one", "ones", "item", "items", "object", "objects", "food", "thing", "things",
            "version", "variant", "x"}
_ORDERING = {"before", "after", "once", "until"}  # connectives that may reverse the text's order
_SEQUENCE = _ORDERING | {"then", "first", "afterward", "afterwards", "later", "next", "finally"}
_PREDICATES = {"work", "works", "help", "helps", "count", "counts", "do", "finish", "complete", "register",
               "matter", "succeed"}
_NOT = {"not", "never", "don't", "dont", "avoid", "no", "instead", "rather", "nor", "neither"}
_NEGATIONS = {"not", "never", "don't", "dont", "avoid", "no", "didn't", "doesn't", "won't", "cannot",
              "can't", "failed", "fails", "fail", "wrong", "mistake"}
# Words that make a sentence say where things are; the weak ones only with the object named in it.
_LOCATIVE = {"found", "find", "finds", "usually", "often", "typically", "tends", "tend", "kept", "stored",
             "located", "sits", "lies", "look", "search", "check", "seen", "where", "likely", "sometimes",
             "commonly", "frequently", "rarely", "seldom", "never", "mostly", "generally", "normally"}
_WEAK_LOCATIVE = {"is", "are", "was", "were", "from", "most", "in", "on"}
# Words that say an object is not (or hardly ever) in a place, and ones that say it is.
_ABSENT = {"rarely", "seldom", "never", "not", "no", "hardly", "unlikely", "empty", "none", "nothing", "zero"}
_PRESENT = {"usually", "often", "mostly", "found", "first", "likely", "typically", "commonly", "frequently",
            "sometimes", "most", "generally", "normally", "best", "next", "also", "too", "again", "try"}
_OBJ_REFS = {"x", "it", "them", "object", "item", "thing", "objects", "items", "things"}
_TARGET_REFS = {"y", "target", "destination", "goal"}
_COUNT = re.compile(r"\b(\d+)\s*(?:of|/|out of)\s*(?:the\s+)?(\d+)\b")


@dataclass(frozen=True)
class Act:
    """One instruction: a canonical verb and what it names (X / Y, object or receptacle types)."""

    op: str
    nouns: tuple = ()
    negated: bool = False
    without: tuple = ()  # nouns it names to avoid ("use the microwave, not the stove")

    @property
    def places(self) -> list[str]:
        return [n for n in self.nouns if n in vocabulary()[2] and n not in self.without]

    def negate(self) -> "Act":
        return Act(self.op, self.nouns, True, self.without)


@dataclass
class Reading:
    """What one skill says: its instructions in reading order (`acts`, negated ones marked;
    `steps`, the positive ones a reader would carry out in order), explicit order facts
    (first op, later op), and where objects are (object type or X -> receptacle type -> score in
    [0, 1]; NOTHING_SAID for a place it does not mention)."""

    acts: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    orders: list = field(default_factory=list)
    places: dict = field(default_factory=dict)
    summary_acts: list = field(default_factory=list)  # the description's: the last of `acts`

    def body_acts(self) -> list:
        """The acts its body says (the description is read last: `summary_acts` end `acts`)."""
        return self.acts[:len(self.acts) - len(self.summary_acts)]


# -- tokens and sentences -------------------------------------------------------------------------
_MARKUP = re.compile(r"[*_`#>\[\](){}<>\"“”=|]")


_QUOTED = re.compile(r'"([^"]{3,200})"|“([^”]{3,200})”')


def unquote_tasks(text: str) -> str:
    """A quoted task sentence ("heat some bread and put it in countertop") is an example of a
    task, not an instruction: it is dropped."""
    return _QUOTED.sub(lambda m: " " if parse_goal(m.group(1) or m.group(2)) else m.group(0), text)


def tokens(text: str) -> list[str]:
    """Lowercase words; X and Y (upper-case placeholders) stay `x` and `y`, a lowercase x or y
    becomes a plain word; a comma, colon or dash is the token `,`."""
    text = re.sub(r"(?<![A-Za-z])[xy](?![A-Za-z])", " _ ", text)
    text = _MARKUP.sub(" ", text).replace("’", "'")
    text = re.sub(r":|\s[-–—]+\s|[–—]", " , ", text)
    return re.findall(r"[a-z]+(?:'[a-z]+)?|\d+|,", text.lower())


_WARNING = re.compile(r"mistake|pitfall|avoid|don'?t|do not|wrong|error|never|gotcha|what not|failure", re.I)


def sentences(body: str) -> list[tuple[str, str]]:
    """(sentence, kind) for the sentences, list items and steps of a body, in order, tables
    dropped. kind: "heading"; "warning" (under a heading or label such as "Common mistakes:",
    "Pitfalls seen:", or marked ❌: what it describes is what not to do); or "text"."""
    out, warning = [], False
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith("|") or re.fullmatch(r"[-=*_\s]+", line):
            continue
        label = line.startswith("#") or (len(line) < 60 and line.rstrip("*").endswith(":"))
        if label:
            warning = bool(_WARNING.search(line))
        kind = "heading" if line.startswith("#") else "warning" if warning or line.startswith(("❌", "✗")) else "text"
        line = re.sub(r"^(?:[-*+•❌✗]|\d+[.)]|step\s+\d+[.:)]?|\(?[a-z]\))\s*", "", line, flags=re.I)
        out += [(s, kind) for s in re.split(r"(?<=[.!?;])\s+", line) if s.strip()]
    return out


def _nouns(words: list[str]) -> list[tuple[int, tuple]]:
    """(position, types) of every noun: the longest phrase first, then single words."""
    single, phrases, _ = vocabulary()
    found, i = [], 0
    while i < len(words):
        for size in (3, 2):
            key = tuple(words[i:i + size])
            if len(key) == size and key in phrases:
                joined = phrases[key]
                found.append((i, single.get(joined, (joined,))))
                i += size
                break
        else:
            w = words[i]
            if w == "x":
                found.append((i, (OBJ,)))
            elif w == "y":
                found.append((i, (TARGET,)))
            elif w in single:
                found.append((i, single[w]))
            i += 1
    return found


def _verb_at(words: list[str], i: int) -> str | None:
    """The instruction word i starts, if it is one."""
    w, before = words[i], words[i - 1] if i else ""
    after = words[i + 1] if i + 1 < len(words) else ""
    if w == "microwave" and before not in ("the", "a", "to", "in", "into", "with", "of") \
            and (after in _OBJ_REFS or after in ("the", "a", "some")):
        return "heat"  # "microwave it"
    op = VERB_OF.get(w)
    if op is None or before in _STATE_BEFORE and not (w.endswith("ing") and before in _BE):
        return None  # "a hot apple", "apples are placed on ...", but "the mistake is putting ..."
    if w in STATES and i and before not in _CLAUSE_START and (after in _GENERIC or after in vocabulary()[0]):
        return None  # "both hot and cool tasks", "a clean mug"
    if op == "use" and w.startswith(("turn", "switch")) and "on" not in words[i + 1:i + 4]:
        return None  # "turn off", "turn around"
    if op == "find" and w.startswith("look") and after == "at":
        return "examine"  # "look at X under the lamp"
    if op in ("put", "take") and after == "to" or op == "put" and after == "back" and "to" in words[i + 2:i + 3]:
        return "go" if op == "put" else "put"  # "move to the fridge"; "take it to the sink"
    if op == "take" and "to" in words[i + 1:i + 4]:
        return "put"  # "take the apple to the microwave"
    return op


def _acts(words: list[str]) -> tuple[list[Act], list[int]]:
    """Each instruction starts a phrase whose nouns run up to the next one; (acts, starts). A
    negation just before the verb negates the phrase ("never heat it on the stove"); one inside
    it, the nouns after it ("use the microwave, not the stove", "instead of the stove")."""
    starts = [(i, op) for i in range(len(words)) if (op := _verb_at(words, i))]
    nouns = _nouns(words)
    acts = []
    for n, (start, op) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(words)
        named = [(i, kinds) for i, kinds in nouns if start < i < end or (op == "heat" and i == start)]
        if op in TRANSFORMS and words[start].endswith("s"):  # "the microwave heats", "the sink cleans"
            named = [(i, k) for i, k in nouns if start - 3 <= i < start and set(k) <= vocabulary()[2]][-1:] + [
                (i, k) for i, k in named if not set(k) <= vocabulary()[2]]
        named += [(i, (OBJ,) if w in _OBJ_REFS else (TARGET,)) for i, w in enumerate(words[start + 1:end], start + 1)
                  if w in _OBJ_REFS or w in _TARGET_REFS]
        cut = next((i for i in range(start + 1, end) if words[i] in _NOT and words[i + 1:i + 2] != ["only"]), end)
        negated = any(_negates_next(words, k) for k in range(max(0, start - 3), start)) or any(
            _negates_before(words, k) for k in range(start + 1, end))  # "heating on the stove does not work"
        if any(_negates_before(words, k) for k in range(start + 1, end)):
            cut = end
        acts.append(Act(op, tuple(dict.fromkeys(k for _, kinds in sorted(named) for k in kinds)), negated,
                        tuple(dict.fromkeys(k for i, kinds in named if i > cut for k in kinds))))
    return acts, [s for s, _ in starts]


def _negates_next(words: list[str], k: int) -> bool:
    """A negation at k that applies to the instruction after it ("never heat it on the stove")."""
    return (words[k] in _NOT or words[k].endswith("n't")) and not _negates_before(words, k) \
        and words[k + 1:k + 2] != ["only"]


def _negates_before(words: list[str], k: int) -> bool:
    """A negation at k that says the phrase before it fails ("... does not work", "won't help")."""
    negation = words[k] in _NOT or words[k].endswith("n't")
    return negation and words[k + 1:k + 2] != [] and words[k + 1] in _PREDICATES


def _ordered(words: list[str], acts: list[Act], starts: list[int]) -> list[Act]:
    """Acts in the order they are to be done: 'before B, A' and 'B after A' put A first."""
    cut = next((i for i, w in enumerate(words) if w in _ORDERING and not _sequential(words, i)), None)
    if cut is None or len(acts) < 2:
        return acts
    head = [a for a, s in zip(acts, starts) if s < cut]
    tail = [a for a, s in zip(acts, starts) if s > cut]
    if head:  # "A before B" keeps the order; "B after A" reverses it
        return tail + head if words[cut] in ("after", "once") else head + tail
    comma = next((i for i in range(cut, len(words)) if words[i] == ","), None)
    if words[cut] in ("after", "once") or comma is None:  # "after A, B" keeps it
        return acts
    lead = [a for a, s in zip(acts, starts) if s < comma]  # "before B, A"
    return [a for a in acts if a not in lead] + lead


def _sequential(words: list[str], i: int) -> bool:
    """'after that', 'once done': the text's own order, like 'then'."""
    return words[i + 1:i + 2] in (["that"], ["this"], ["which"], ["done"], ["finished"], ["doing"])


def _with_tools(acts: list[Act]) -> list[Act]:
    """A heat/cool/clean with no receptacle takes the receptacle of the put/use/go just before
    it ("put it in the microwave and heat it", "go to the sink. Wash it."); that put/use
    becomes a go (the transformation is what was meant). A put after it is the delivery."""
    out = list(acts)
    for i, act in enumerate(out):
        before = out[i - 1] if i else None
        if act.op not in TRANSFORMS or not before or before.op not in ("put", "use", "go") \
                or not before.places or before.negated != act.negated:
            continue
        if not act.places:
            out[i] = act = Act(act.op, act.nouns + (before.places[0],), act.negated, act.without)
        if before.op != "go" and act.places[0] in before.places:  # "take it to the fridge, cool it"
            out[i - 1] = Act("go", before.nouns, before.negated, before.without)
    return out


# -- one skill ----------------------------------------------------------------------------------
def read(skill) -> Reading:
    """What `skill` (its name, description and body) says."""
    return _read(skill.name, skill.description, skill.body)


@functools.lru_cache(maxsize=4096)
def _read(name: str, description: str, body: str) -> Reading:
    reading = Reading()
    title = next((line.lstrip("# ").strip() for line in body.splitlines() if line.startswith("#")), "")
    subjects = _subjects(" ".join([name.replace("-", " "), description, title]))
    mentions: list[Mention] = []
    said_of = [(s, "description") for s, _ in sentences(description)]  # last: what it is, not steps
    for sentence, kind in sentences(body) + said_of:
        words = tokens(unquote_tasks(sentence))
        acts, starts = _acts(words)
        lead = _condition(words)  # "when the task asks for a hot X, ..." says when, not what to do
        when = [a for a, s in zip(acts, starts) if s < lead]
        then = _ordered(words, [a for a, s in zip(acts, starts) if s >= lead], [s for s in starts if s >= lead])
        acts = _with_tools(when + then)
        when, then = acts[:len(when)], acts[len(when):]
        then = _instead(when, then)
        negated = bool(_NEGATIONS & set(words)) or any(w.endswith("n't") for w in words)
        negated |= kind == "warning"  # "Common mistakes: putting it in Y first."
        before = len(reading.acts)
        if negated and len(acts) >= 2 and _SEQUENCE & set(words):
            reading.orders.append((acts[-1].op, acts[0].op))  # "don't put X in Y before heating it"
            reading.acts += acts  # its tools are still the right ones
        elif negated:
            reading.acts += [a if a.negated or a.without else a.negate() for a in acts]
        else:
            if _SEQUENCE & set(words):
                reading.orders += [(a.op, b.op) for i, a in enumerate(then) for b in then[i + 1:]]
            reading.acts += acts
            if kind == "text":
                reading.steps += then
        if kind == "description":
            reading.summary_acts += reading.acts[before:]
        _locate(mentions, words, acts, subjects)
    reading.steps = _with_tools(reading.steps)  # "Go to the sink. Wash it." across sentences
    _table(mentions, body, subjects)
    reading.places = _scores(mentions)
    return reading


def procedures(skill) -> frozenset:
    """The procedures `skill` tells the executor how to do (or not to do): each transformation
    an instruction of it names (heat, cool, clean) and "look" where it says to use a lamp, as a
    task of that kind takes them (`guidance`). What a skill-repo capacity counts."""
    acts = read(skill).acts
    lamps = {TARGET, "desklamp", "floorlamp"}  # a look task's target is its lamp: "switch on the Y" tells it
    return frozenset({a.op for a in acts if a.op in TRANSFORMS}
                     | ({"look"} if any(a.op in ("use", "examine") and lamps & set(a.nouns) for a in acts) else set()))


def _instead(when: list[Act], then: list[Act]) -> list[Act]:
    """'To heat an object, use the microwave': the instruction is the heating, with that tool."""
    for act in when:
        if act.op not in TRANSFORMS or any(a.op == act.op for a in then):
            continue
        at = next((i for i, a in enumerate(then) if a.op in ("go", "use", "put") and a.places
                   and (not act.places or act.places[0] in a.places)), None)
        if at is not None:
            tool = act.places[:1] or then[at].places[:1]
            then = then[:at] + [Act(act.op, act.nouns + tuple(tool), act.negated, act.without)] + then[at + 1:]
    return then


def _condition(words: list[str]) -> int:
    """Where the instruction starts after a leading condition ("when ..., ", "to heat X, ",
    "if ..., "): the index after its comma, or 0."""
    if words and words[0] in ("when", "whenever", "if", "for", "to", "while", "in") and "," in words:
        return words.index(",") + 1
    return 0


def _subjects(text: str) -> tuple:
    """The object types a skill is about, from its name, description and title."""
    return tuple(dict.fromkeys(k for _, kinds in _nouns(tokens(text)) for k in kinds
                               if k not in vocabulary()[2] and k not in (OBJ, TARGET)))


@dataclass(frozen=True)
class Mention:
    """A receptacle type said of an object: in reading order, with counts if given (found,
    searched) and whether it is where the object is not ("never in cabinets", "0 of 12")."""

    owner: str
    place: str
    count: tuple | None = None
    negative: bool = False


def _locate(mentions: list, words: list[str], acts: list[Act], subjects: tuple) -> None:
    """Where-things-are mentions of one sentence, appended to `mentions`."""
    strong = bool(_LOCATIVE & set(words)) or bool(_COUNT.search(" ".join(words)))  # "- countertop, 4 of 18"
    listing = not acts  # "- Mugs and cups: coffeemachine, cabinet, sinkbasin."
    if not (strong or listing or _WEAK_LOCATIVE & set(words)) or any(
            a.op in ("put", "go", "use") + TRANSFORMS for a in acts):
        return
    subjects = subjects if strong else ()  # "the thing to use is the microwave" locates nothing
    text, offsets, at = " ".join(words), [], 0
    for w in words:
        offsets.append(at)
        at += len(w) + 1
    counts = [(m.start(), int(m.group(1)), int(m.group(2))) for m in _COUNT.finditer(text)]
    receptacles = vocabulary()[2]
    negative = [w in _ABSENT or w.endswith("n't") for w in words]
    all_negative = any(negative) and not _PRESENT & set(words)  # "drawers and the sink never did"
    nouns = _nouns(words)
    owners: list[str] = []
    after_place = False
    for n, (i, kinds) in enumerate(nouns):
        if kinds == (TARGET,):
            continue
        if not all(k in receptacles for k in kinds):  # an object (or X): it owns the places after it
            owners = ([] if after_place else owners) + list(kinds)
            after_place = False
            continue
        after_place = True
        following = nouns[n + 1][0] if n + 1 < len(nouns) else len(words)
        near = negative[max(0, i - 4):i] + negative[i + 1:min(following, i + 4)]
        count = next(((f, t) for start, f, t in counts if offsets[i] <= start <= offsets[i] + 60 and t >= f), None)
        for owner in owners or subjects:
            for kind in kinds:
                mentions.append(Mention(owner, kind, count, all_negative or any(near) or (count or (1,))[0] == 0))


def _scores(mentions: list) -> dict:
    """owner -> place -> score, from one skill's mentions. A writer lists the likeliest first, so
    the order of mention ranks; counts, where given, set the found share (Laplace: (f+1)/(s+2)),
    and a place mentioned without counts among counted ones keeps its place in the order."""
    out: dict = {}
    for owner in dict.fromkeys(m.owner for m in mentions):
        mine = [m for m in mentions if m.owner == owner]
        counted = any(m.count for m in mine)
        scores, last, rank = {}, 0.95, 0
        for m in mine:
            if m.place in scores:
                continue
            if m.count:
                score = last = (m.count[0] + 1) / (m.count[1] + 2)
            elif m.negative:
                score = 0.1
            elif counted:
                score = last = last - 0.001
            else:
                score, rank = max(0.6, 0.95 - 0.01 * rank), rank + 1
            scores[m.place] = score
        out[owner] = scores
    return out


def _table(mentions: list, body: str, subjects: tuple) -> None:
    """Table rows: an object with its places left to right (`| apple | countertop, fridge |`),
    or a place with counts (`| sinkbasin | 14 | 16 |`) of the objects the skill is about."""
    receptacles = vocabulary()[2]
    for line in body.splitlines():
        if not line.strip().startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        first = [k for _, kinds in _nouns(tokens(cells[0])) for k in kinds]
        numbers = [int(c) for c in cells[1:] if c.isdigit()]
        if first and all(k in receptacles for k in first):  # a place row
            count = (numbers[0], numbers[1]) if len(numbers) >= 2 and numbers[1] >= numbers[0] else None
            mentions += [Mention(owner, first[0], count, bool(count) and count[0] == 0) for owner in subjects]
        elif first:  # an object row
            rest = tokens(" , ".join(cells[1:]))
            negative = bool(_ABSENT & set(rest))
            for _, kinds in _nouns(rest):
                mentions += [Mention(owner, kind, None, negative) for owner in first for kind in kinds
                             if kind in receptacles]


# -- what one task takes from its skills ----------------------------------------------------------
@dataclass
class Guidance:
    """What the retrieved skills say about one task; `empty` when they say nothing about it."""

    need: str | None = None  # what the task asks done to its object: heat / cool / clean / use
    said: bool = False  # a skill says how: a tool to do it with, or its order with the delivery
    tool: str | None = None  # the receptacle type to do it with
    avoid: set = field(default_factory=set)  # receptacle types a skill says not to do it with
    transform_first: bool = True  # do it before delivering (False: a skill orders the opposite)
    places: dict = field(default_factory=dict)  # object type -> receptacle type -> score

    @property
    def empty(self) -> bool:
        return not self.said and not self.places

    def score(self, obj: str, place: str) -> float:
        return self.places.get(obj, {}).get(place, NOTHING_SAID)


def needed(task: str) -> str | None:
    """What a task sentence asks done to its object: heat / cool / clean / use (a lamp)."""
    words = tokens(task)
    for word in words:
        op = STATES.get(word) or VERB_OF.get(word)
        if op in TRANSFORMS:
            return op
    return "use" if {"look", "examine"} & set(words) else None


def guidance(goal, task: str, skills) -> Guidance:
    """What `skills` (in retrieval order: an earlier skill's word stands) say about the task."""
    out = Guidance(need=needed(task))
    ordered = False
    for skill in skills:
        reading = read(skill)
        for owner, scores in reading.places.items():
            mine = goal.obj if owner == OBJ else owner
            if mine in (goal.obj, goal.target):
                for kind, score in scores.items():
                    out.places.setdefault(mine, {}).setdefault(kind, score)
        if out.need == "use":  # what the body says to use or avoid stands; the description's where it says none
            def naming_a_tool(acts):  # a thing to use (a lamp, a television), not a receptacle to search
                return [a for a in acts if a.op in ("use", "examine") and set(a.nouns) - {OBJ, goal.obj} - set(a.places)]

            said = naming_a_tool(reading.body_acts()) or naming_a_tool(reading.summary_acts)
            out.said |= any(not a.negated and {TARGET, goal.target, "desklamp", "floorlamp"} & set(a.nouns)
                            for a in said)
        elif out.need in TRANSFORMS:
            ordered = _transform(out, reading, goal, ordered)
    return out


def _transform(out: Guidance, reading: Reading, goal, ordered: bool) -> bool:
    mine = [a for a in reading.acts + reading.steps if a.op == out.need]
    for act in mine:
        tools = [p for p in act.places if p != goal.target]
        out.avoid.update(act.without)
        if act.negated:
            out.avoid.update(tools)
        elif tools and out.tool is None and tools[0] not in out.avoid:
            out.tool = tools[0]
    if not ordered:
        facts = [(a, b) for a, b in reading.orders if {a, b} == {out.need, "put"}]
        steps = [a.op for a in reading.steps if a.op in (out.need, "put")]
        if facts:
            out.transform_first, ordered = facts[0][0] == out.need, True
        elif out.need in steps and "put" in steps:
            out.transform_first, ordered = steps[0] == out.need, True
    out.said = out.tool is not None or ordered  # a bare mention of the word tells nothing
    return ordered
