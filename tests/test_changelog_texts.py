"""The user-facing text of changelog errors: templates/_changelog_error.{en,zh}.j2, rendered from real errors.

The errors come from running bot/rules/changelog/ over the case table of tests/test_changelog.py, plus a few
inputs of this file's own for codes and variants that table does not produce (the default-branch check, and
sub-variants of a sentence). Each error renders as one Markdown line per language, with the same facts.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections import defaultdict
from typing import Any
from unittest import mock

import jinja2
import pytest
from test_changelog import CASES, HISTORY, PR, PREFIX, _b, appended, entry

import bot.rules.changelog
import bot.rules.changelog.entries
import bot.rules.changelog.errors
import bot.rules.value_kinds
from bot.core.templates import Templates, code_span
from bot.rules.changelog import ChangelogError, ChangelogLimits, check_append, validate_default_branch

ENVIRONMENT = Templates().environment
LANGUAGES = ("en", "zh")
MACROS = {
    language: ENVIRONMENT.from_string('{% import "_changelog_error.' + language + '.j2" as t %}{{ t.describe(e) }}')
    for language in LANGUAGES
}
CJK = re.compile(r"[\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
# The package's source, every module of it: where the codes and variants the check can emit are written.
SOURCE = "\n".join(
    inspect.getsource(importlib.import_module(f"bot.rules.changelog.{module.name}"))
    for module in pkgutil.iter_modules(bot.rules.changelog.__path__)
)


def render(language: str, error: ChangelogError | dict[str, Any]) -> str:
    if isinstance(error, ChangelogError):
        error = {"line": error.line, "code": error.code, "params": error.params}
    return MACROS[language].render(e=error)


def _appended_errors(head: str | bytes, base: str | bytes | None = HISTORY) -> list[ChangelogError]:
    return list(check_append(_b(base), _b(head), pr_number=PR, canonical_prefix=PREFIX).errors)


def _default_branch_errors(text: str) -> list[ChangelogError]:
    return validate_default_branch(text, canonical_prefix=PREFIX)


def _limited_errors(head: str, **limits: int) -> list[ChangelogError]:
    return list(
        check_append(
            _b(HISTORY), _b(head), pr_number=PR, canonical_prefix=PREFIX, limits=ChangelogLimits(**limits)
        ).errors
    )


def _failing_errors(exc: BaseException) -> list[ChangelogError]:
    """What the check says when `exc` is raised inside it (checking the appended entry at line 13)."""
    with mock.patch.object(bot.rules.changelog.entries._EntryChecker, "check", side_effect=exc):
        return _appended_errors(appended(entry()))


# Inputs for what the case table does not reach: name -> the errors bot/rules/changelog/ gives for them.
EXTRA = {
    "default branch: a placeholder link, a string entry, an entry without pr-link": _default_branch_errors(
        HISTORY.replace("1033", "XXX", 1) + "\n- just text\n\n- config-keys: [a]\n"
    ),
    "default branch: not a list": _default_branch_errors("config-keys: [a]\n"),
    "space before the colon of pr-link": _appended_errors(
        appended(entry("XXX").replace("pr-link: XXX", "pr-link : XXX"))
    ),
    "no space after a quoted pr-link key": _appended_errors(
        appended('- {config-keys: [a], description: [b], "pr-link":XXX}\n')
    ),
    "one trailing space after the link": _appended_errors(appended(entry("XXX "))),
    "indented line opening a new file": _appended_errors("  owner: me\n" + entry(), base=None),
    "tabs on twelve lines": _appended_errors(appended(entry("XXX", desc=tuple(f"a\tb{i}" for i in range(12))))),
    "scenario-type a string": _appended_errors(appended(entry("XXX", "  scenario-type: agentic-coding"))),
    "description items of other YAML types": _appended_errors(
        appended(
            entry("XXX", desc=("x",)).replace(
                '    - "x"', "    - !!binary aGVsbG8=\n    - 2026-01-01 10:00:00\n    - [a]\n    - {a: 1}"
            )
        )
    ),
    "config-keys a set": _appended_errors(
        appended("- config-keys: !!set {a: null}\n  description: [x]\n  pr-link: XXX\n")
    ),
    "an entry that is a list": _appended_errors(appended("- - a\n  - b\n")),
    "a not-accepted pr-link on the next line": _appended_errors(
        appended(entry("", "    TBD").replace("pr-link: \n", "pr-link:\n"))
    ),
    "YAML error without context": _appended_errors(appended(entry("XXX", "  evals-only: true: x"))),
    # A value with backticks and a line break that would start a line of its own with a bot command.
    "pr-link with backticks and a newline": _appended_errors(appended(entry('"`TBD`\\n/use 1"'))),
    # The caps (bot/rules/changelog/limits.py's ChangelogLimits), met with small limits.
    "a head above max_bytes": _limited_errors(appended(entry()), max_bytes=len(HISTORY) + 10),
    "a description nested 40 levels": _appended_errors(
        appended(entry("XXX").replace('    - "Tune"', "    - " + "[" * 40 + "x" + "]" * 40))
    ),
    "more values than max_values": _limited_errors(appended(entry(), entry()), max_values=12),
    "RecursionError inside the check": _failing_errors(RecursionError("maximum recursion depth exceeded")),
    "MemoryError inside the check": _failing_errors(MemoryError()),
    "a check that did not finish": list(bot.rules.changelog.unfinished_check(2_000_000).errors),
}


def _gather() -> list[tuple[str, ChangelogError]]:
    found: list[tuple[str, ChangelogError]] = []
    for case in CASES:
        result = check_append(_b(case.base), _b(case.head), pr_number=case.pr, canonical_prefix=PREFIX)
        found.extend((case.name, error) for error in result.errors)
    for name, errors in EXTRA.items():
        assert errors, f"extra input {name!r} gives no error"
        found.extend((name, error) for error in errors)
    return found


ERRORS = _gather()
IDS = [f"{name} / {error.code} @{error.line}" for name, error in ERRORS]


def _spans(text: str) -> tuple[list[str], str]:
    """The contents of `text`'s inline code spans as CommonMark reads them, and the text around them."""
    spans, rest, pos = [], [], 0
    while (opening := re.compile(r"`+").search(text, pos)) is not None:
        closing = re.compile(rf"(?<!`){opening.group()}(?!`)").search(text, opening.end())
        if closing is None:
            break
        content = text[opening.end() : closing.start()]
        if content[:1] == content[-1:] == " " and content.strip():
            content = content[1:-1]
        spans.append(content)
        rest.append(text[pos : opening.start()])
        pos = closing.end()
    rest.append(text[pos:])
    return spans, "\x00".join(rest)


def _integers(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\d+", _spans(text)[1])}


# --- coverage: every code and variant bot/rules/changelog/ can emit has been rendered from real params ---------


_ERR_WITH_CODE = re.compile(r'_err\(\s*[^,()]+(?:\([^()]*\))?[^,()]*,\s*"([a-z0-9-]+)"')


def _source_codes() -> set[str]:
    """The codes of every `_err(line, "code", ...)` call and of the character rules."""
    return set(_ERR_WITH_CODE.findall(SOURCE)) | set(bot.rules.changelog.errors._CHARACTER_CODES)


def _source_variants() -> dict[str, set[str]]:
    reasons_at = re.search(r"reason=(.*?)[,)]\n", SOURCE, re.S)
    assert reasons_at is not None, "no reason= in bot/rules/changelog/"
    reasons = reasons_at.group(1)
    return {
        "change": set(bot.rules.changelog.errors._HISTORY_CHANGES),
        "problem": set(re.findall(r'problem(?:, what)? = "([a-z-]+)"', SOURCE))
        | set(re.findall(r'problem="([a-z-]+)"', SOURCE)),
        "reason": set(re.findall(r'"([a-z-]+)"', reasons)),
    }


def test_the_source_parsers_find_what_they_look_for():
    calls = len(re.findall(r"\b_err\(", SOURCE)) - 1  # less its definition
    assert calls == len(_ERR_WITH_CODE.findall(SOURCE)) + 1, "an `_err(` call whose code the regex misses"
    assert len(re.findall(r"_err\(lines\[0\], code,", SOURCE)) == 1  # the character rules' one
    codes = _source_codes()
    assert {
        "history-changed",
        "pr-link-not-accepted",
        "default-branch-link",
        "tab",
        "not-utf8",
        "correction-with-append",
        "unknown-field",
        "separator",
    } <= codes
    assert len(codes) >= 32
    assert {"file-too-large", "too-deep", "too-many-values", "too-complex"} <= codes
    variants = _source_variants()
    assert {"changed", "whitespace", "removed", "inserted", "moved", "extended"} == variants["change"]
    assert {"missing", "extra-blank-lines", "block-scalar", "text-after-link"} <= variants["problem"]
    assert variants["reason"] == {"value-on-next-line", "not-accepted"}


def test_every_code_in_the_source_is_rendered_from_a_real_error():
    seen = {error.code for _, error in ERRORS}
    assert _source_codes() - seen == set(), "codes without a real error here: add an input that produces them"
    assert seen <= _source_codes()


def test_every_variant_in_the_source_is_rendered_from_a_real_error():
    seen: dict[str, set[str]] = defaultdict(set)
    for _, error in ERRORS:
        for key in ("change", "problem", "reason"):
            if key in error.params and error.code != "yaml-syntax":  # yaml-syntax's problem is PyYAML's text
                seen[key].add(error.params[key])
    for key, values in _source_variants().items():
        assert seen[key] == values, key


# Every kind of value the check names (`actual`) for what YAML's safe loader builds: the templates word each.
KINDS = set(bot.rules.value_kinds.KINDS) | {"date", "datetime", "set"}


def test_every_wrong_type_expectation_and_kind_is_rendered():
    wrong = [error.params for _, error in ERRORS if error.code == "wrong-type"]
    assert {p["expected"] for p in wrong} == set(bot.rules.changelog.entries._EXPECTED)
    assert {p["actual"] for p in wrong} == KINDS


def _variant(error: ChangelogError) -> Any:
    """Which sentence of its code an error needs (the branches of the templates)."""
    p = error.params
    return {
        "history-changed": lambda: p["change"],
        "trailing-newline": lambda: p["problem"],
        "pr-link-format": lambda: (p["problem"], p["spaces"] is None),
        "link-correction-not-accepted": lambda: p["reason"],
        "separator": lambda: "top" if p["expected"] == 0 else "few" if p["blank_lines"] < p["expected"] else "many",
        "outside-entry": lambda: p["extends_history"],
        "unknown-field": lambda: "merge" if p["merge_key"] else p["suggestion"] is None,
        "yaml-syntax": lambda: p["needs_quotes"],
        "wrong-type": lambda: (p["expected"], p["actual"] == "null"),
        "not-a-mapping": lambda: p["actual"] in KINDS,
        "too-complex": lambda: p["cause"],
    }.get(error.code, lambda: None)()


def _skeleton(text: str) -> str:
    spans, rest = _spans(text)
    return re.sub(r"\d+", "N", rest)


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_variant_has_its_own_sentence(language):
    skeletons: dict[str, dict[Any, set[str]]] = defaultdict(lambda: defaultdict(set))
    for _, error in ERRORS:
        skeletons[error.code][_variant(error)].add(_skeleton(render(language, error)))
    expected_variants = {
        "history-changed": 6,
        "trailing-newline": 2,
        "pr-link-format": 5,
        "link-correction-not-accepted": 2,
        "separator": 3,
        "outside-entry": 2,
        "unknown-field": 3,
        "yaml-syntax": 2,
        "wrong-type": 7,
        "not-a-mapping": 2,
        "too-complex": 3,
    }
    for code, count in expected_variants.items():
        assert len(skeletons[code]) == count, (code, list(skeletons[code]))
    for code, variants in skeletons.items():
        groups = list(variants.values())
        for i, group in enumerate(groups):
            for other in groups[i + 1 :]:
                assert not group & other, f"{code}: two variants share a sentence: {group & other}"


# --- shape of each line ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "error"), ERRORS, ids=IDS)
def test_each_error_renders_one_line_per_language(name, error):
    starts = {"en": f"line {error.line}: ", "zh": f"第 {error.line} 行："}
    for language in LANGUAGES:
        text = render(language, error)
        assert text and "\n" not in text and "\r" not in text
        assert text == text.strip()
        assert text.startswith(starts[language]), text
        assert len(text) > len(starts[language]) + 10
        spans, rest = _spans(text)
        assert "`" not in rest, f"an unclosed code span: {text}"
        assert "  " not in rest, f"a double space outside code spans: {text}"
        assert rest.endswith(".") if language == "en" else rest.endswith("。"), text


@pytest.mark.parametrize(("name", "error"), ERRORS, ids=IDS)
def test_english_is_english_and_chinese_is_chinese(name, error):
    english, chinese = (render(language, error) for language in LANGUAGES)
    assert not CJK.search(_spans(english)[1]), english
    assert len(CJK.findall(_spans(chinese)[1])) >= 4, chinese
    assert "Fix: " in english and "修改方法：" in chinese


@pytest.mark.parametrize(("name", "error"), ERRORS, ids=IDS)
def test_both_languages_carry_the_same_code_spans_and_numbers(name, error):
    english, chinese = (render(language, error) for language in LANGUAGES)
    assert set(_spans(english)[0]) == set(_spans(chinese)[0]), (english, chinese)
    assert _integers(english) == _integers(chinese), (english, chinese)
    assert error.line in _integers(english)


def test_the_pr_link_sentence_names_the_value_this_pr_and_every_accepted_form():
    [error] = [e for name, e in ERRORS if name == "pr-link TBD"]
    english, chinese = (render(language, error) for language in LANGUAGES)
    assert english == (
        f"line 17: the `pr-link` value `TBD` is not accepted (this PR is #{PR}). Fix: use `XXX`, "
        f"`{PREFIX}XXX` or `{PREFIX}{PR}`."
    )
    assert chinese == (
        f"第 17 行：`pr-link` 的值 `TBD` 不被接受（本 PR 是 #{PR}）。修改方法：改用 `XXX`、"
        f"`{PREFIX}XXX` 或 `{PREFIX}{PR}`。"
    )


def test_numbers_a_sentence_needs_are_given():
    """Facts that only the English message held before the params gained them."""
    by_name = {name: error for name, error in ERRORS}
    assert "line 18" in render("en", by_name["pr-link on the next line"])  # value_line
    assert "第 18 行" in render("zh", by_name["pr-link on the next line"])
    tabs = by_name["tabs on twelve lines"]
    assert "on 12 lines (16, 17, 18, 19, 20, 21, 22, 23, 24, 25 and 2 more)" in render("en", tabs)
    assert "共 12 行（第 16、17、18、19、20、21、22、23、24、25 行，另有 2 行）" in render("zh", tabs)


# --- values from the PR's file ----------------------------------------------------------------------------------


def test_a_value_with_backticks_and_a_newline_is_one_safe_code_span():
    [error] = EXTRA["pr-link with backticks and a newline"]
    assert error.params["value"] == "`TBD`\n/use 1"
    for language in LANGUAGES:
        text = render(language, error)
        assert "\n" not in text
        assert code_span("`TBD`\n/use 1") in text  # `` `TBD` /use 1 ``
        assert "`` `TBD` /use 1 ``" in text
        assert "`TBD` /use 1" in _spans(text)[0]


def test_file_values_are_never_outside_a_code_span():
    """No string that came from the file (its values, keys, lines) shows up in the text around the code spans."""
    inside = 0
    for _, error in ERRORS:
        for key in ("value", "key", "old", "after", "text", "expected", "found"):
            value = error.params.get(key)
            if key == "expected" and error.code != "history-changed":
                continue  # elsewhere `expected` holds the check's own tokens and forms
            if not isinstance(value, str) or len(value.strip()) < 3:
                continue
            for language in LANGUAGES:
                spans, rest = _spans(render(language, error))
                assert value.strip() not in rest, (error.code, key, value, rest)
                inside += any(value.strip().replace("\n", " ") in span for span in spans)
    assert inside > 100


def test_a_long_value_is_shortened_inside_its_span():
    [error] = EXTRA["pr-link with backticks and a newline"]
    long = ChangelogError(error.line, error.code, {**error.params, "value": "y" * 500})
    for language in LANGUAGES:
        spans, _ = _spans(render(language, long))
        assert "y" * 117 + "..." in spans


# --- branches no input reaches ----------------------------------------------------------------------------------


def test_the_merge_key_sentence_is_rendered_from_a_real_error():
    """The merge key `<<` once never reached its sentence (PyYAML flattened it before the check saw it)."""
    [merge] = [e for name, e in ERRORS if name == "merge key with an inline mapping"]
    assert merge.params["merge_key"] is True and merge.params["field"] == "<<"
    assert render("en", merge) == (
        "line 18: the merge key `<<` is not a field of a changelog entry. Fix: write the fields out in full."
    )
    english, chinese = (render(language, merge) for language in LANGUAGES)
    assert _spans(english)[0] == _spans(chinese)[0] == ["<<"] and _integers(english) == _integers(chinese)


def test_an_unquoted_wildcard_is_told_to_take_quotes():
    """`- *-mtp`: a config-keys wildcard reads as a YAML alias; the fix says to quote it."""
    [error] = [e for name, e in ERRORS if name == "config-key starting with an unquoted *"]
    assert render("en", error).endswith(
        'Fix: put a value that starts with `*`, `&` or `!` in quotes, e.g. `- "*-mtp"`.'
    )
    assert render("zh", error).endswith('修改方法：以 `*`、`&` 或 `!` 开头的值要加引号，例如 `- "*-mtp"`。')


def test_an_alias_to_another_entry_is_named_with_its_anchor_line():
    [alias] = [e for name, e in ERRORS if name == "alias to a value in another appended entry"]
    for language in LANGUAGES:
        text = render(language, alias)
        assert "found alias 's' of an anchor in another entry (line 18)" in _spans(text)[0], text
        assert '- "*-mtp"' in _spans(text)[0], text


def test_a_history_line_past_the_base_end_still_renders():
    """Params shaped like real ones for a branch no input reaches: a history line past the base's end (no
    change kind names it)."""
    [edited] = [e for name, e in ERRORS if name == "history edited"]
    past_end = {
        "line": 12,
        "code": "history-changed",
        "params": {**edited.params, "change": "removed", "base_line": 12, "expected": None},
    }
    english, chinese = (render(language, past_end) for language in LANGUAGES)
    assert _spans(english)[0] == _spans(chinese)[0] and _integers(english) == _integers(chinese)
    assert "ends at line 11" in english


def test_an_error_object_renders_like_its_mapping():
    _, error = ERRORS[0]
    for language in LANGUAGES:
        assert MACROS[language].render(e=error) == render(language, error)


# --- what has no text ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_unknown_code_raises(language):
    with pytest.raises(jinja2.UndefinedError, match="no text for changelog error no-such-code"):
        render(language, {"line": 3, "code": "no-such-code", "params": {}})


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(
    ("code", "key"),
    [
        ("history-changed", "change"),
        ("trailing-newline", "problem"),
        ("pr-link-format", "problem"),
        ("link-correction-not-accepted", "reason"),
        ("wrong-type", "expected"),
    ],
)
def test_an_unknown_variant_raises(language, code, key):
    [error] = [e for _, e in ERRORS if e.code == code][:1]
    broken = {"line": error.line, "code": code, "params": {**error.params, key: "no-such-variant"}}
    with pytest.raises(jinja2.UndefinedError, match=f"no text for changelog error {code}"):
        render(language, broken)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_missing_param_raises(language):
    _, error = next((n, e) for n, e in ERRORS if e.code == "pr-link-not-accepted")
    params = {k: v for k, v in error.params.items() if k != "pr_number"}
    with pytest.raises(jinja2.UndefinedError):
        render(language, {"line": error.line, "code": error.code, "params": params})


# --- the caps ---------------------------------------------------------------------------------------------


def test_the_cap_sentences_name_the_limit_and_the_size():
    by_name = {name: error for name, error in ERRORS}
    large = by_name["a head above max_bytes"]
    # the first byte past the limit is the 10th of line 13 (line 12 is the empty line after the history)
    assert (large.code, large.line, large.params) == (
        "file-too-large",
        13,
        {"size": len(appended(entry())), "limit": len(HISTORY) + 10},
    )
    assert render("en", large).startswith(
        f"line 13: the changelog is {len(appended(entry())):,} bytes, more than "
        f"the limit of {len(HISTORY) + 10:,} bytes"
    )
    assert f"{len(HISTORY) + 10:,} 字节的上限" in render("zh", large)
    deep = by_name["a description nested 40 levels"]
    assert (deep.code, deep.line, deep.params) == ("too-deep", 16, {"limit": 32})
    assert "nested more than 32 levels deep" in render("en", deep) and "超过了 32 层" in render("zh", deep)
    values = by_name["more values than max_values"]
    assert (values.code, values.params) == ("too-many-values", {"limit": 12})
    assert "more than 12 YAML values" in render("en", values)
    for name, cause, words in (
        ("RecursionError inside the check", "recursion", "recursion limit"),
        ("MemoryError inside the check", "memory", "ran out of memory"),
    ):
        error = by_name[name]
        assert (error.code, error.line, error.params) == ("too-complex", 13, {"cause": cause})
        assert words in render("en", error)
    unfinished = by_name["a check that did not finish"]
    assert (unfinished.line, unfinished.params) == (1, {"cause": "unfinished"})
    assert "did not finish" in render("en", unfinished) and "没有在允许的时间内完成" in render("zh", unfinished)


def _more(language: str, count: int, shown: int, at_least: bool) -> str:
    return ENVIRONMENT.from_string(
        '{% import "_changelog_error.' + language + '.j2" as t %}{{ t.more(count, shown, at_least) }}'
    ).render(count=count, shown=shown, at_least=at_least)


def test_the_unlisted_errors_are_counted_in_words_that_say_at_least():
    """ChangelogResult.error_count_is_lower_bound: a count the check stopped making reads "at least"."""
    assert _more("en", 50, 50, False) == _more("zh", 50, 50, False) == ""
    assert _more("en", 51, 50, False) == "1 more changelog error is not listed here."
    assert _more("en", 1250, 50, False) == "1,200 more changelog errors are not listed here."
    assert _more("en", 51, 50, True) == (
        "At least 1 more changelog error is not listed here: the check stopped once the first 50 were found."
    )
    assert _more("zh", 51, 50, True) == ("这里还有至少 1 个 changelog 问题没有列出：检查在找到前 50 个问题后就停止了。")
    for count, at_least in ((51, False), (1250, True)):
        english, chinese = _more("en", count, 50, at_least), _more("zh", count, 50, at_least)
        assert _integers(english) == _integers(chinese)
        assert not CJK.search(english) and len(CJK.findall(chinese)) >= 4
