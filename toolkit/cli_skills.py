"""`skillos skills ...`: validate, export and search skill repos (folders of NAME/SKILL.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from skillos.cli_common import JSON, emit
from skillos.errors import SkillosError

skills_app = typer.Typer(help="Validate and search skill repos (folders of NAME/SKILL.md).",
                         no_args_is_help=True)


@skills_app.command("validate")
def skills_validate(path: Path = typer.Argument(..., help="A SKILL.md file or a folder of skills.")):
    """Check frontmatter and names; one line per problem, exit 1 if any."""
    from skillos.repo import validate_path

    problems = validate_path(path)
    emit(problems, False, lambda ps: ps or [f"{path}: valid"])
    if problems:
        raise typer.Exit(1)


@skills_app.command("export")
def skills_export(
    repo: Path = typer.Argument(..., help="A curated skill repo folder (NAME/SKILL.md ...)."),
    out: Path = typer.Argument(..., help="A new folder: the bundle, laid out as skills/NAME/SKILL.md."),
):
    """Lay a curated repo out as a bundle that `npx skills add OUT` installs (e.g. for Claude Code)."""
    from skillos.repo import SkillRepo
    from skillos.repo.skill import SkillError

    if not repo.is_dir():
        raise SkillosError(f"{repo}: no such skill repo folder")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SkillosError(f"{out}: exists and is {'a file' if not out.is_dir() else 'not empty'}; "
                           "export into a new folder")
    try:
        skills = SkillRepo.load(repo)
    except SkillError as exc:
        raise SkillosError(f"{repo}: {exc}") from None
    if not len(skills):
        raise SkillosError(f"{repo}: no skills to export")
    skills.copy(out / "skills")  # SKILL.md with single-line name and description: what the skills CLI parses
    emit(skills, False,
         lambda s: [f"exported {len(s)} skills to {out / 'skills'}; install with: npx skills add {out}"])


@skills_app.command("search")
def skills_search(
    folder: Path = typer.Argument(..., help="A skill repo folder."),
    query: str = typer.Argument(..., help="What the agent is about to do, e.g. a task sentence."),
    k: Optional[int] = typer.Option(None, "-k", help="How many skills to return (default: retrieval.top_k)."),
    mode: Optional[str] = typer.Option(None, help="bm25, or shuffled (k random skills: a control); "
                                       "default: retrieval.mode."),
    as_json: bool = JSON,
):
    """Top-k skills for a query, by BM25 over name + description + body."""
    from skillos.cli_render import search_lines
    from skillos.config.eval import RetrievalConfig
    from skillos.repo import SkillRepo, retrieve

    k = RetrievalConfig().top_k if k is None else k
    mode = mode or RetrievalConfig().mode
    if not folder.is_dir():
        raise SkillosError(f"{folder}: no such skill repo folder")
    if mode not in ("bm25", "shuffled"):
        raise SkillosError(f"--mode {mode!r}: choose bm25 or shuffled")
    hits = retrieve(SkillRepo.load(folder), query, k, mode)
    emit([{"name": h.skill.name, "score": h.score, "description": h.skill.description} for h in hits], as_json,
         search_lines)
