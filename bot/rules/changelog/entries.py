"""Checking one composed entry of the appended text against the fields' rules (docs/spec.md, "The
performance changelog")."""

from __future__ import annotations

import difflib
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bot.rules.changelog.errors import ChangelogError, _err, _show, _yaml_error
from bot.rules.changelog.fields import BOOLEAN_FIELDS, FIELDS, REQUIRED_FIELDS, SCENARIO_TYPES
from bot.rules.changelog.loading import _MERGE_TAG, _Builder
from bot.rules.changelog.results import AppendedEntry
from bot.rules.changelog.state import _Check
from bot.rules.value_kinds import kind_of

# wrong-type's `expected` tokens: what a field must be
_EXPECTED = ("string", "list-of-strings", "list-of-scenario-types", "boolean", "positive-integer")


class _EntryChecker:
    """Checks one composed entry; its errors go to the check's sink, each built only if it would be kept."""

    def __init__(self, check: _Check, source: str, first_line: int):
        self.check_ = check
        self.sink = check.sink
        self.source = source  # the composed text
        self.first_line = first_line  # head line number of the composed text's line 0
        self.pr_number = check.pr_number
        self.prefix = check.prefix
        self.own: range | None = None  # the entry's head lines, when it may hold aliases to other entries

    def at(self, node: Node) -> int:
        return self.first_line + node.start_mark.line

    def foreign(self, node: Node) -> bool:
        """A node written outside this entry's lines: it came in by an alias to another entry's anchor."""
        return self.own is not None and self.at(node) not in self.own

    def wants(self, line: int) -> bool:
        """Whether to build an error on `line`: not for another entry's line (what an alias brought in is not
        this entry's), nor one the sink would not keep (that one is counted here instead)."""
        if self.own is not None and line not in self.own:
            return False
        if self.sink.room(line):
            return True
        self.sink.skip()
        return False

    def add(self, error: ChangelogError) -> None:
        self.sink.add(error)

    def check(
        self, node: Node, dash_line: int, own: range | None = None, aliases: tuple[tuple[int, str, int], ...] = ()
    ) -> AppendedEntry | None:
        """The entry, or None when it is not a mapping or cannot be built; its errors go to the sink.

        `own` is the entry's head lines when it may hold aliases to anchors of other entries, and `aliases`
        those aliases, as (line, name, the anchor's line). Each is an error on its own line, and what it brings
        in is not checked here (it is a stand-in on the anchor's line): the rules would blame the other
        entry's lines for it.
        """
        self.own = own
        for line, name, anchor_line in aliases:
            if not self.wants(line):
                continue
            self.add(
                _err(
                    line,
                    "yaml-syntax",
                    problem=f"found alias {name!r} of an anchor in another entry (line {anchor_line})",
                    context="each entry is read on its own",
                    needs_quotes=True,
                )
            )
        if self.foreign(node):
            return None  # the whole entry is an alias (`- *a`): nothing of its own to check
        if isinstance(node, MappingNode):
            # The merge key `<<` is not a field. PyYAML's constructor would flatten it into the mapping, so that
            # the merged fields look written here: take it out of the node before the entry is constructed.
            merges = [key_node for key_node, _ in node.value if key_node.tag == _MERGE_TAG]
            for key_node in merges:
                if self.wants(self.at(key_node)):
                    self.add(
                        _err(
                            self.at(key_node),
                            "unknown-field",
                            field="<<",
                            suggestion=None,
                            expected=list(FIELDS),
                            merge_key=True,
                        )
                    )
            if merges:
                node.value = [(k, v) for k, v in node.value if k.tag != _MERGE_TAG]
        builder = _Builder(self.check_.constructor)
        try:
            data = builder.build(node)
        except yaml.YAMLError as exc:
            error = _yaml_error(exc, self.first_line, dash_line)
            if self.wants(error.line):
                self.add(error)
            return None
        for key, first, dup in builder.duplicates:
            line = self.first_line + dup
            if not self.wants(line):
                continue
            self.add(
                _err(line, "duplicate-key", key=_show(key), first_line=self.first_line + first, entry_line=dash_line)
            )
        if not isinstance(node, MappingNode) or not isinstance(data, dict):
            if self.wants(dash_line):
                self.add(_err(dash_line, "not-a-mapping", actual=kind_of(data), value=_show(data)))
            return None
        pairs: dict[Any, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            if self.foreign(key_node):
                continue  # a key written as an alias to another entry: its alias error says so
            key = builder.build(key_node)
            if key in FIELDS:
                pairs[key] = (key_node, value_node)  # the last one, as in `data`
                continue
            if not self.wants(self.at(key_node)):
                continue  # counted, not built: it would not be kept
            shown = _show(key)
            # A field name is at most 19 characters: a longer word cannot reach the 0.6 ratio (and difflib
            # would index every character of a 2 MB key).
            guess = (
                difflib.get_close_matches(shown.lower().replace("_", "-"), FIELDS, n=1, cutoff=0.6)
                if len(shown) <= 44
                else []
            )
            self.add(
                _err(
                    self.at(key_node),
                    "unknown-field",
                    field=shown,
                    suggestion=guess[0] if guess else None,
                    expected=list(FIELDS),
                    merge_key=False,
                )
            )
        for name in REQUIRED_FIELDS:
            if name not in pairs and self.wants(dash_line):
                self.add(_err(dash_line, "missing-field", field=name))

        # A value that is an alias to another entry's has its alias error; it is present, but not checked.
        checked = {key: pair for key, pair in pairs.items() if not self.foreign(pair[1])}
        config_keys = self.string_list(checked.get("config-keys"), data.get("config-keys"), "config-keys")
        description = self.string_list(checked.get("description"), data.get("description"), "description")
        scenario = self.string_list(
            checked.get("scenario-type"), data.get("scenario-type"), "scenario-type", allowed=SCENARIO_TYPES
        )
        flags = {name: self.boolean(checked.get(name), data.get(name), name) for name in BOOLEAN_FIELDS}
        ep = self.min_prefill(checked.get("eval-min-prefill-ep"), data.get("eval-min-prefill-ep"))
        link = self.pr_link(checked.get("pr-link"), data.get("pr-link"))
        if flags["append-only"]:
            combined = [name for name in ("evals-only", "all-evals") if flags[name]]
            if combined and self.wants(self.at(checked["append-only"][0])):
                self.add(_err(self.at(checked["append-only"][0]), "append-only-combination", combined=combined))
        return AppendedEntry(
            line=dash_line,
            config_keys=tuple(config_keys or ()),
            description=tuple(description or ()),
            pr_link=link or "",
            scenario_type=tuple(scenario or ()),
            evals_only=bool(flags["evals-only"]),
            all_evals=bool(flags["all-evals"]),
            append_only=bool(flags["append-only"]),
            eval_min_prefill_ep=ep,
        )

    def wrong_type(self, line: int, name: str, expected: str, value: Any, index: int | None = None) -> None:
        """`expected` is a token of _EXPECTED; `actual` is kind_of's word for what was written."""
        if not self.wants(line):
            return
        self.add(
            _err(
                line,
                "wrong-type",
                field=name,
                expected=expected,
                actual=kind_of(value),
                value=_show(value),
                index=index,
                choices=list(SCENARIO_TYPES) if expected == "list-of-scenario-types" else None,
            )
        )

    def string_list(
        self, pair: tuple[Node, Node] | None, value: Any, name: str, allowed: tuple[str, ...] | None = None
    ) -> list[str] | None:
        if pair is None:
            return None
        key_node, value_node = pair
        line = self.at(key_node)
        expected = "list-of-strings" if allowed is None else "list-of-scenario-types"
        if not isinstance(value, list):
            self.wrong_type(line, name, expected, value)
            return None
        if not value:
            if self.wants(line):
                self.add(_err(line, "empty-list", field=name))
            return None
        items = value_node.value if isinstance(value_node, SequenceNode) else [value_node] * len(value)
        good = True
        for index, (item, item_node) in enumerate(zip(value, items)):
            if isinstance(item, str) and item.strip() and (allowed is None or item in allowed):
                continue
            good = False
            item_line = self.at(item_node)
            if not isinstance(item, str):
                self.wrong_type(item_line, name, "string", item, index)
            elif not item.strip():
                if self.wants(item_line):
                    self.add(_err(item_line, "empty-string", field=name, index=index))
            elif self.wants(item_line):
                self.add(_err(item_line, "invalid-value", field=name, value=item, expected=list(allowed or ())))
        return value if good else None

    def boolean(self, pair: tuple[Node, Node] | None, value: Any, name: str) -> bool | None:
        if pair is None:
            return None
        if not isinstance(value, bool):
            self.wrong_type(self.at(pair[0]), name, "boolean", value)
            return None
        return value

    def min_prefill(self, pair: tuple[Node, Node] | None, value: Any) -> int | None:
        name = "eval-min-prefill-ep"
        if pair is None:
            return None
        line = self.at(pair[0])
        if isinstance(value, bool) or not isinstance(value, int):
            self.wrong_type(line, name, "positive-integer", value)
            return None
        if value < 1:
            if self.wants(line):
                self.add(_err(line, "out-of-range", field=name, value=value, minimum=1))
            return None
        return value

    def pr_link(self, pair: tuple[Node, Node] | None, value: Any) -> str | None:
        if pair is None:
            return None
        key_node, value_node = pair
        line = self.at(key_node)
        forms = self.check_.forms
        if not isinstance(value, str) or not isinstance(value_node, ScalarNode):
            self.wrong_type(line, "pr-link", "string", value)
            return None
        if value_node.start_mark.line != key_node.start_mark.line:
            if self.wants(line):
                self.add(
                    _err(line, "pr-link-next-line", value=value, value_line=self.at(value_node), **self.link_params())
                )
            return None
        if value not in forms:
            if self.wants(line):
                self.add(_err(line, "pr-link-not-accepted", value=value, **self.link_params()))
            return None
        start = self.source.rfind("\n", 0, value_node.start_mark.index) + 1
        end = self.source.find("\n", value_node.start_mark.index)
        text = self.source[start:] if end == -1 else self.source[start:end]
        between = text[key_node.end_mark.column : value_node.start_mark.column]
        after = text[value_node.end_mark.column :] if value_node.end_mark.line == value_node.start_mark.line else None
        block = value_node.style in ("|", ">")  # libyaml gives a plain scalar the style "", PyYAML None
        spaces: int | None = None  # spacing-around-colon: after `pr-link:` (None: not only extra spaces)
        trailing: str | None = None  # text-after-link: what follows the link
        if block:
            problem = "block-scalar"  # `|` or `>`
        elif between != ": ":
            problem = "spacing-around-colon"
            spaces = len(between) - 1
            if not (between[:1] == ":" and spaces > 1 and not between[1:].strip(" ")):
                spaces = None  # not only extra spaces after the colon
        elif after and not self.flow_tail(after) and not after.strip(" "):
            spaces = len(after)
            problem = "trailing-spaces"
        elif after and not self.flow_tail(after):
            trailing = after.strip()
            problem = "text-after-link"
        else:
            return value
        if self.wants(line):
            self.add(
                _err(
                    line,
                    "pr-link-format",
                    value=value,
                    text=text,
                    problem=problem,
                    spaces=spaces,
                    after=trailing,
                    **self.link_params(),
                )
            )
        return None

    def link_params(self) -> dict[str, Any]:
        return {"pr_number": self.pr_number, "prefix": self.prefix, "expected": list(self.check_.forms)}

    @staticmethod
    def flow_tail(after: str) -> bool:
        """In a flow mapping (`{..., pr-link: XXX}`) the link is followed by `,` or `}`, with no space."""
        return after[:1] in (",", "}")
