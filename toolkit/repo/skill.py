"""One skill: a markdown file with YAML frontmatter in the Agent Skills format.

Required frontmatter: `name` (1-64 chars of [a-z0-9-], no leading, trailing or double hyphen)
and `description` (1-1024 chars), both single-line strings, because `npx skills` parses
frontmatter without block scalars. Optional: `license`, `compatibility`, `metadata`
(string -> string), `allowed-tools`. The body is markdown.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import frontmatter
import yaml

from skillos.errors import SkillError, yaml_error_line
from skillos.safety import load_yaml

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
# A retrieved skill goes into an executor prompt top-k at a time; the spec asks for < ~5k tokens.
MAX_BODY_CHARS = 20_000
OPTIONAL_KEYS = ("license", "compatibility", "metadata", "allowed-tools")
_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def validate_name(name: object) -> str:
    """Return the name if valid; raise SkillError with the one reason it is not."""
    if not isinstance(name, str) or not name:
        raise SkillError(f"name must be a non-empty string, got {_short(name)}")
    if "/" in name or "\\" in name or ".." in name or name.startswith("."):
        raise SkillError(f"name {name!r} is a path; a skill name may not leave the repo folder")
    if len(name) > MAX_NAME_CHARS:
        raise SkillError(f"name {name[:20]!r}... is {len(name)} chars; the limit is {MAX_NAME_CHARS}")
    if not _NAME_RE.fullmatch(name):  # the whole string: "pwn\n" must not pass
        raise SkillError(
            f"name {name!r} must be lowercase letters, digits and single hyphens, "
            "with no leading or trailing hyphen"
        )
    return name


def validate_description(description: object) -> str:
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"description must be a non-empty string, got {_short(description)}")
    if len(description.splitlines()) > 1 or any(unicodedata.category(c) == "Cc" for c in description):
        raise SkillError("description must be a single line (no line breaks or control characters)")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillError(
            f"description is {len(description)} chars; the limit is {MAX_DESCRIPTION_CHARS}"
        )
    return description


def _short(value: object) -> str:
    """A bounded repr for messages: a list or mapping from frontmatter may be huge."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return repr(value)[:80]
    return f"a {type(value).__name__}"


def validate_body(body: object) -> str:
    if not isinstance(body, str):
        raise SkillError(f"body must be a string, got {type(body).__name__}")
    if len(body) > MAX_BODY_CHARS:
        raise SkillError(f"body is {len(body)} chars; the limit is {MAX_BODY_CHARS}")
    return body


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str = ""
    extra: dict = field(default_factory=dict)  # optional frontmatter keys, kept as written

    def __post_init__(self):
        validate_name(self.name)
        validate_description(self.description)
        validate_body(self.body)
        unknown = sorted(set(self.extra) - set(OPTIONAL_KEYS))
        if unknown:
            raise SkillError(
                f"unknown frontmatter key {unknown[0]!r}; allowed: name, description, "
                + ", ".join(OPTIONAL_KEYS)
            )

    @property
    def text(self) -> str:
        """What retrieval indexes: name, description and body."""
        return f"{self.name.replace('-', ' ')}\n{self.description}\n{self.body}"

    def to_markdown(self) -> str:
        post = frontmatter.Post(self.body, name=self.name, description=self.description, **self.extra)
        # width: never fold a long description over lines (the skills CLI reads one line).
        return frontmatter.dumps(post, sort_keys=False, width=10**9, allow_unicode=True) + "\n"


class _StrictYAML(frontmatter.YAMLHandler):
    """Frontmatter through skillos' safe YAML: no duplicated keys, no alias bombs."""

    def load(self, fm, **kwargs):
        return load_yaml(fm, "frontmatter")


def parse_skill(text: str, where: str = "<skill>") -> Skill:
    """Parse SKILL.md text; raise SkillError('<where>: <reason>') on any problem."""
    try:
        post = frontmatter.loads(text, handler=_StrictYAML())
    except yaml.YAMLError as exc:
        raise SkillError(f"{where}: invalid YAML frontmatter{yaml_error_line(exc)}") from None
    except Exception as exc:  # frontmatter raises assorted errors on odd delimiters
        raise SkillError(f"{where}: unreadable frontmatter: {exc}") from None
    meta = dict(post.metadata)
    if not meta:
        raise SkillError(f"{where}: no YAML frontmatter (the file must start with '---')")
    if "name" not in meta:
        raise SkillError(f"{where}: frontmatter has no 'name'")
    if "description" not in meta:
        raise SkillError(f"{where}: frontmatter has no 'description'")
    name, description = meta.pop("name"), meta.pop("description")
    try:
        return Skill(name=name, description=description, body=post.content, extra=meta)
    except SkillError as exc:
        raise SkillError(f"{where}: {exc}") from None
