"""Reasoning problem sets: hub datasets read from local files in their own layouts, and offline
generated problems in the same row layouts.

Hub datasets (downloaded once on a machine with internet; nothing downloads at run time), under
`env.reasoning.data_dir/<hub repo id>/` in any of .jsonl / .json / .parquet / .csv:

* aime24 `Maxwell-Jia/AIME_2024`: ID, Problem, Answer (integer graded);
* aime25 `MathArena/aime_2025`: problem_idx, problem, answer (integer graded);
* gpqa_diamond `Idavidrein/gpqa` (gated): gpqa_diamond.csv with Question, Correct Answer,
  Incorrect Answer 1-3, Record ID; the options are shuffled by `env.reasoning.choice_seed` and
  the permutation is recorded in the task (so a run can be re-graded);
* deepmath `zwhe99/DeepMath-103K`: question, final_answer, topic (math-verify graded; training).

Every row becomes a `Problem`: the task the runner plays, with a content hash for the
train/held-out overlap check. Seeds come from sha256, never `hash()`.
"""

from __future__ import annotations

import csv
import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

from skillos.errors import SkillosError
from skillos import safety


@dataclass(frozen=True)
class Problem:
    id: str
    task: str  # the problem as the executor reads it (options included for multiple choice)
    answer: str  # the reference: a LaTeX expression, an integer, or a letter A-D
    grading: str  # math | integer | choice
    task_type: str  # the family or topic: groups and per-type tables
    source: str  # the dataset it came from
    content_hash: str
    options: tuple = ()  # multiple choice: the option texts in the order shown
    choice_seed: int | None = None  # the seed the options were shuffled with

    @property
    def path(self) -> str:  # the runner loads a task by its path; here, its id in the env's pool
        return self.id


def content_hash(*parts) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


def rng(*parts) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big"))


# -- rows in the hub layouts -> problems -----------------------------------------------------------
def from_integer_row(row: dict, source: str, columns: dict, index: int) -> Problem:
    text, answer = str(row[columns["problem"]]).strip(), str(row[columns["answer"]]).strip()
    ident = row.get(columns.get("id", ""), index)
    return Problem(f"{source}-{ident}", text, answer, "integer", row.get(columns.get("type", ""), source) or source,
                   source, content_hash(text, answer))


def from_math_row(row: dict, source: str, columns: dict, index: int) -> Problem:
    text, answer = str(row[columns["problem"]]).strip(), str(row[columns["answer"]]).strip()
    topic = str(row.get(columns.get("type", ""), "") or source)
    digest = content_hash(text, answer)
    return Problem(f"{source}-{digest[:12]}", text, answer, "math", topic, source, digest)


def from_choice_row(row: dict, source: str, columns: dict, index: int, seed: int) -> Problem:
    """A GPQA row: the correct and three incorrect options, shuffled by (seed, record id)."""
    question = str(row["Question"]).strip()
    correct = str(row["Correct Answer"]).strip()
    options = [correct] + [str(row[f"Incorrect Answer {i}"]).strip() for i in (1, 2, 3)]
    ident = str(row.get("Record ID") or content_hash(question)[:12])
    order = list(range(4))
    rng("skillos-choice-order", seed, ident).shuffle(order)
    shown = tuple(options[i] for i in order)
    letter = "ABCD"[order.index(0)]
    text = question + "\n\n" + "\n".join(f"({c}) {o}" for c, o in zip("ABCD", shown))
    topic = str(row.get("Subdomain") or row.get("High-level domain") or source)
    return Problem(f"{source}-{ident}", text, letter, "choice", topic, source,
                   content_hash(question, correct, *sorted(options[1:])), shown, seed)


@dataclass(frozen=True)
class HubDataset:
    repo: str  # the hub dataset id: also the folder under data_dir
    columns: dict  # our name -> the dataset's column
    convert: object
    split: str  # train | held-out: the role the paper gives it
    prefer: str = ""  # a file name containing this is read first (gpqa_diamond.csv among gpqa_*.csv)
    gated: bool = False

    def fetch_hint(self, folder: Path) -> str:
        login = "accept its terms on the hub page and `huggingface-cli login`, then " if self.gated else ""
        return (f"on a machine with internet, {login}run `huggingface-cli download {self.repo} "
                f"--repo-type dataset --local-dir {folder}` and copy the folder here")


HUB = {
    "aime24": HubDataset("Maxwell-Jia/AIME_2024", {"problem": "Problem", "answer": "Answer", "id": "ID"},
                         from_integer_row, "held-out"),
    "aime25": HubDataset("MathArena/aime_2025", {"problem": "problem", "answer": "answer", "id": "problem_idx"},
                         from_integer_row, "held-out"),
    "gpqa_diamond": HubDataset("Idavidrein/gpqa", {"problem": "Question", "answer": "Correct Answer"},
                               from_choice_row, "held-out", prefer="diamond", gated=True),
    "deepmath": HubDataset("zwhe99/DeepMath-103K", {"problem": "question", "answer": "final_answer", "type": "topic"},
                           from_math_row, "train"),
}
DATASETS = ("generated",) + tuple(HUB)


MAX_DATASET_BYTES = 1 << 30  # a local .json / .csv problem file (DeepMath-103K's files are ~100 MB)


def read_rows(path: Path, columns) -> list[dict]:
    """The rows of one local dataset file, read bounded: a FIFO or device is refused, a .json or
    .csv over MAX_DATASET_BYTES is refused before it is read, and a .jsonl line that is damaged,
    too long or nested too deep is a one-line error naming it (SkillosError)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        safety.open_regular(path, "dataset file").close()
        names = pq.read_schema(path).names
        return pq.read_table(path, columns=[c for c in columns if c in names] or None).to_pylist()
    if path.suffix == ".csv":
        return list(csv.DictReader(safety.read_text(path, MAX_DATASET_BYTES, "dataset file").splitlines()))
    if path.suffix == ".json":
        data = safety.read_json_file(path, "dataset file", MAX_DATASET_BYTES, expect=None)
        rows = data if isinstance(data, list) else (data.get("data") or data.get("rows") or []) \
            if isinstance(data, dict) else []
        return [r for r in rows if isinstance(r, dict)]
    skips = safety.Skips()
    rows = [row for _, _, row in safety.jsonl_records(path, "dataset file", skips)]
    if skips:
        raise SkillosError(f"{path}: {skips.places[0]} ({skips.summary()})")
    return rows


def load_hub(name: str, data_dir: Path, n: int, seed: int, choice_seed: int) -> list[Problem]:
    """The first `n` problems of a hub dataset in file order (a training set: a seeded sample)."""
    spec = HUB[name]
    folder = data_dir / spec.repo
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".jsonl", ".json", ".parquet", ".csv")) \
        if folder.is_dir() else []
    if spec.prefer:
        files = [p for p in files if spec.prefer in p.name.lower()]
    if not files:
        raise SkillosError(f"dataset {name} ({spec.repo}): no .jsonl/.json/.parquet/.csv file found in "
                           f"{folder}; {spec.fetch_hint(folder)} (nothing downloads at run time)")
    wanted = list(spec.columns.values()) + (["Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3",
                                             "Record ID", "Subdomain"] if spec.convert is from_choice_row else [])
    rows, where = [], {}
    for path in files:
        try:
            found = read_rows(path, wanted)
        except (OSError, ValueError, SkillosError) as exc:
            raise SkillosError(f"dataset {name}: cannot read {path} ({exc})") from None
        missing = [c for c in spec.columns.values() if found and c not in found[0]]
        if missing:
            raise SkillosError(f"dataset {name}: {path} has no column {missing[0]!r} (its columns: "
                               f"{', '.join(map(str, found[0]))}); expected the {spec.repo} layout")
        where.update({len(rows) + i: path for i in range(len(found))})
        rows += found
    if spec.convert is from_choice_row:
        problems = [from_choice_row(r, name, spec.columns, i, choice_seed) for i, r in enumerate(rows)]
    else:
        problems = [spec.convert(r, name, spec.columns, i) for i, r in enumerate(rows)]
    if spec.split == "train":
        problems.sort(key=lambda p: content_hash("skillos-sample", seed, p.content_hash))
    if len(problems) < n:
        raise SkillosError(f"dataset {name}: {len(problems)} problems in {folder}; asked for {n} "
                           "(lower env.n_games / env.n_train_games)")
    return problems[:n]

