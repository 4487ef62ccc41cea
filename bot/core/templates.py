"""Bilingual comment templates: each kind is rendered in English and Chinese and joined by a layout."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NoReturn

import jinja2
from jinja2 import meta

from bot.core.resources import TEMPLATES_PACKAGE, resource_dir

LANGUAGES = ("en", "zh")
LAYOUT = "layout.md.j2"
DEFAULT_DIRECTORY = resource_dir(TEMPLATES_PACKAGE, LAYOUT)  # the top-level templates/, shipped as package data
SUFFIX = ".md.j2"
TITLE_SUFFIX = "_title.{language}.txt.j2"

_BACKTICK_RUN = re.compile(r"`+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class KindNotFound(jinja2.TemplateNotFound):
    """A template kind that is missing its English file, its Chinese file, or both."""


def code_span(value: object) -> str:
    """Return `value` as one Markdown inline code span, whatever backticks or line breaks it holds.

    Line breaks become spaces, so the span stays on one line and no part of the
    value can start a line of its own (where it might read as a bot command).
    The fence is one backtick longer than the longest run inside the value, and
    a value that starts or ends with a backtick or a space is padded with one
    space on each side, which CommonMark strips again.
    """
    text = _LINE_BREAK.sub(" ", str(value))
    if not text:
        return "` `"
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * (longest + 1)
    if text[0] in "` " or text[-1] in "` ":
        text = f" {text} "
    return f"{fence}{text}{fence}"


def one_line(value: object) -> str:
    """Collapse every run of whitespace, line breaks included, into one space."""
    return " ".join(str(value).split())


def _fail(message: str) -> NoReturn:
    """Stop rendering: a template reached a case it has no text for."""
    raise jinja2.UndefinedError(message)


class Templates:
    """The comment templates in one directory, rendered as English followed by a 中文 section."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else DEFAULT_DIRECTORY
        self.loader = jinja2.FileSystemLoader(self.directory)
        self.environment = jinja2.Environment(
            loader=self.loader,
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.environment.filters["code"] = code_span
        self.environment.filters["oneline"] = one_line
        self.environment.globals["fail"] = _fail
        self._known: set[str] | None = None  # the kinds found in the folder when it was last listed

    def kinds(self) -> list[str]:
        """Every kind that has both `<kind>.en.md.j2` and `<kind>.zh.md.j2`, sorted."""
        found: dict[str, set[str]] = {language: set() for language in LANGUAGES}
        for path in self.directory.glob(f"*{SUFFIX}"):
            kind, dot, language = path.name[: -len(SUFFIX)].rpartition(".")
            if dot and kind and language in found and path.is_file():
                found[language].add(kind)
        return sorted(set.intersection(*found.values()))

    def render(self, kind: str, **variables: Any) -> str:
        """The full bilingual text of `kind`; a missing variable raises `jinja2.UndefinedError`."""
        halves = {
            language: self.environment.get_template(name).render(**variables)
            for language, name in self._files(kind).items()
        }
        text = self.environment.get_template(LAYOUT).render(**halves)
        return text.rstrip() + "\n"

    def title(self, kind: str, **variables: Any) -> str:
        """A one-line bilingual title (issue titles): `English / 中文`, from `<kind>_title.<lang>.txt.j2`."""
        parts = [
            one_line(self.environment.get_template(kind + TITLE_SUFFIX.format(language=language)).render(**variables))
            for language in LANGUAGES
        ]
        return " / ".join(parts)

    def variables(self, kind: str) -> dict[str, set[str]]:
        """The variables each language of `kind` expects from the caller: {"en": {...}, "zh": {...}}."""
        provided = set(self.environment.globals)
        result: dict[str, set[str]] = {}
        for language, name in self._files(kind).items():
            source, _, _ = self.loader.get_source(self.environment, name)
            parsed = self.environment.parse(source, name=name)
            result[language] = set(meta.find_undeclared_variables(parsed)) - provided
        return result

    def _files(self, kind: str) -> dict[str, str]:
        names = {language: f"{kind}.{language}{SUFFIX}" for language in LANGUAGES}
        # the folder is listed once, and again only for a kind not seen in it, not on every render
        if self._known is None or kind not in self._known:
            self._known = set(self.kinds())
        if kind in self._known:
            return names
        missing = [name for name in names.values() if not (self.directory / name).is_file()]
        raise KindNotFound(
            kind,
            f"template kind {kind!r} needs both {' and '.join(names.values())} in {self.directory};"
            f" missing: {', '.join(missing) or 'a valid kind name'}",
        )
