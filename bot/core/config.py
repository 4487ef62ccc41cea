"""Settings from the environment, and the policy: app.yaml defaults deep-merged with a repository's override."""

from __future__ import annotations

import copy
import difflib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import ValidationError

from bot.core.resources import APP_PACKAGE, resource_file
from bot.delivery.journal import is_postgres
from bot.github.client import IN_FLIGHT
from bot.rules.policy import AutoLabel, Labels, Policy, VerifiedItem, policy_errors
from bot.rules.pull_request import label_key

APP_YAML = resource_file(APP_PACKAGE, "app.yaml")  # the top-level app.yaml, shipped as package data
REPO_CONFIG_PATH = ".github/sweepbot.yml"
DEFAULT_API_URL = "https://api.github.com"
DEFAULT_DB = "./sweepbot.db"


class ConfigError(ValueError):
    """A configuration that cannot be used; `errors` lists every problem found."""

    def __init__(self, errors: Sequence[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class Settings:
    """What the process is told by its environment (Probot's names where Probot has one)."""

    app_id: str | None = None
    private_key: str | None = field(default=None, repr=False)
    webhook_secrets: tuple[str, ...] = field(default=(), repr=False)
    host: str = "127.0.0.1"
    port: int = 3000
    log_level: str | None = None  # None: INFO live, WARNING in the sandbox (logging_level)
    api_url: str = DEFAULT_API_URL
    db_path: str = DEFAULT_DB
    workers: int = 64  # deliveries under way at once; their GitHub requests share `github_in_flight`
    max_attempts: int = 3
    retry_delay: float = 2.0
    drain_timeout: float = 20.0
    read_timeout: float = 10.0
    # content-creating requests per installation in any 60 s; GitHub's secondary limit is 80. 0: unpaced
    # (GitHub Enterprise Server without secondary rate limits).
    writes_per_minute: int = 80
    # transient failures (GitHub down, rate limits) are retried on a growing schedule this long
    retry_for: float = 6 * 3600.0
    # seconds one GitHub request may take before the client gives up (read; connect is at most 5)
    http_timeout: float = 10.0
    # GitHub requests under way at once from the App (GitHub's limit is 100); replicas on PostgreSQL split it
    github_in_flight: int = IN_FLIGHT
    # workers (and their GitHub requests) on a thread and event loop of their own, apart from intake
    worker_thread: bool = True
    # live `serve`: the workers in a process of their own, the webhook intake alone in the server's (the sandbox's
    # in-memory GitHub stays in one process); False: on a thread of the server's process (worker_thread)
    worker_process: bool = True
    # a label event waits this long before it is handled, so a burst of them ends in one decision; 0: at once
    settle_seconds: float = 3.0
    # on PostgreSQL: a replica that stops renewing its lanes (killed, cut off) loses them after this long
    lease_seconds: float = 15.0
    # /healthz shows its details (repositories, installations, errors) only to a request bearing this token;
    # without one set, live /healthz says only whether the bot is healthy
    health_token: str | None = field(default=None, repr=False)

    @property
    def live(self) -> bool:
        """Live when the App can authenticate; otherwise the sandbox runs."""
        return bool(self.app_id and self.private_key)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, *, dotenv: bool = True) -> Settings:
        """Every setting read once; each bad variable is one line of the ConfigError (name, value, what is accepted)."""
        if env is None:
            if dotenv:
                from dotenv import load_dotenv

                # an explicit path: with none, python-dotenv searches from this module's folder, not the cwd
                load_dotenv(Path.cwd() / ".env", override=False)
            env = dict(os.environ)
        errors: list[str] = []
        values: dict[str, Any] = {}
        for variable, name, read in ENV_SETTINGS:
            raw = env.get(variable)
            if raw is None or not raw.strip():
                continue  # unset or blank: the default
            try:
                values[name] = read(raw)
            except _NotAccepted as bad:
                errors.append(f"{variable} must be {bad.accepted}, got {bad.shown or repr(raw)}")
        key = env.get("PRIVATE_KEY") or None
        if key is None and env.get("PRIVATE_KEY_PATH"):
            try:
                key = Path(env["PRIVATE_KEY_PATH"]).read_text()
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
                errors.append(
                    f"PRIVATE_KEY_PATH must be a readable PEM file, got {env['PRIVATE_KEY_PATH']!r} ({reason})"
                )
        if errors:
            raise ConfigError(errors)
        if key is not None and "\\n" in key and "\n" not in key:
            key = key.replace("\\n", "\n")  # keys pasted into one-line env files
        secrets = tuple(s.strip() for s in env.get("WEBHOOK_SECRET", "").split(",") if s.strip())
        return cls(
            app_id=env.get("APP_ID") or None,
            private_key=key,
            webhook_secrets=secrets,
            host=env.get("HOST") or cls.host,
            **values,
        )

    def logging_level(self) -> str:
        """LOG_LEVEL when it is set; else INFO live and WARNING in the sandbox."""
        if self.log_level is not None:
            return self.log_level
        return "INFO" if self.app_id or self.private_key else "WARNING"

    def live_problems(self) -> list[str]:
        """Why live mode cannot start, if it was asked for."""
        problems = []
        if not self.webhook_secrets:
            problems.append("WEBHOOK_SECRET is not set: refusing to accept unsigned webhooks")
        if not self.app_id:
            problems.append("APP_ID is not set")
        if not self.private_key:
            problems.append("PRIVATE_KEY or PRIVATE_KEY_PATH is not set")
        return problems


class _NotAccepted(ValueError):
    """A setting's value that its reader refuses; `accepted` says what it takes."""

    def __init__(self, accepted: str, shown: str | None = None):
        super().__init__(accepted)
        self.accepted = accepted
        self.shown = shown  # what the message shows of the value, when not the value itself (it may hold a password)


def _whole(low: int, high: int | None, accepted: str) -> Callable[[str], int]:
    def read(raw: str) -> int:
        text = raw.strip()
        if not text.isascii() or not text.isdigit() or int(text) < low or (high is not None and int(text) > high):
            raise _NotAccepted(accepted)
        return int(text)

    return read


def _seconds(*, zero: bool) -> Callable[[str], float]:
    accepted = f"a number of seconds {'0 or more' if zero else 'above 0'} and below 3600"

    def read(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise _NotAccepted(accepted) from None
        if not (0 <= value if zero else 0 < value) or not value < 3600:  # NaN fails both
            raise _NotAccepted(accepted)
        return value

    return read


SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


HEALTH_TOKEN_LENGTH = 16


def _token(raw: str) -> str:
    text = raw.strip()
    if len(text) < HEALTH_TOKEN_LENGTH or not text.isascii() or not text.isprintable() or " " in text:
        raise _NotAccepted(
            f"at least {HEALTH_TOKEN_LENGTH} printable ASCII characters without spaces", shown=f"{len(text)} characters"
        )
    return text


def _switch(raw: str) -> bool:
    try:
        return SWITCH_WORDS[raw.strip().lower()]
    except KeyError:
        raise _NotAccepted("1 or 0 (also true/false, yes/no, on/off)") from None


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _log_level(raw: str) -> str:
    if raw.strip().upper() not in LOG_LEVELS:
        raise _NotAccepted(f"one of {', '.join(LOG_LEVELS)} (any case)")
    return raw.strip().upper()


def _api_url(raw: str) -> str:
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise _NotAccepted(
            "an http:// or https:// URL of GitHub's REST API, e.g. https://api.github.com or"
            " https://HOST/api/v3 for GitHub Enterprise Server"
        )
    return raw.strip().rstrip("/")


_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def _journal_target(raw: str) -> str:
    """SWEEPBOT_DB: a file path, or a PostgreSQL URL; any other URL would be taken for an odd SQLite file name."""
    scheme = _URL_SCHEME.match(raw.strip())
    if scheme and not is_postgres(raw.strip()):
        raise _NotAccepted(
            "a file path (SQLite) or a postgresql:// or postgres:// URL", shown=f"a {scheme.group(1)}:// URL"
        )  # not the URL: it may hold a password
    return raw.strip()


# (variable, Settings field, reader): the settings that take a number, a level or a URL. A reader returns the
# value or raises _NotAccepted; unset or blank keeps the field's default.
ENV_SETTINGS: tuple[tuple[str, str, Callable[[str], Any]], ...] = (
    ("PORT", "port", _whole(1, 65535, "a TCP port, a whole number from 1 to 65535")),
    ("LOG_LEVEL", "log_level", _log_level),
    ("GITHUB_API_URL", "api_url", _api_url),
    ("SWEEPBOT_DB", "db_path", _journal_target),
    ("SWEEPBOT_WORKERS", "workers", _whole(0, None, "a whole number of workers, 0 or more (0: journal only)")),
    (
        "SWEEPBOT_WRITES_PER_MINUTE",
        "writes_per_minute",
        _whole(0, None, "a whole number of writes, 0 or more (0: unpaced)"),
    ),
    ("SWEEPBOT_HTTP_TIMEOUT", "http_timeout", _seconds(zero=False)),
    (
        "SWEEPBOT_GITHUB_IN_FLIGHT",
        "github_in_flight",
        _whole(1, 100, "a whole number of requests from 1 to 100 (GitHub allows 100 at once)"),
    ),
    ("SWEEPBOT_SETTLE_SECONDS", "settle_seconds", _seconds(zero=True)),
    ("SWEEPBOT_LEASE_SECONDS", "lease_seconds", _seconds(zero=False)),
    ("SWEEPBOT_WORKER_PROCESS", "worker_process", _switch),
    ("SWEEPBOT_HEALTH_TOKEN", "health_token", _token),
)


def load_app_yaml(path: Path = APP_YAML) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def policy_defaults() -> dict[str, Any]:
    """app.yaml's `policy:` as plain data: what a repository's file is merged over."""
    return copy.deepcopy(load_app_yaml()["policy"])


def default_policy() -> Policy:
    """The policy in force for a repository without a file of its own."""
    return Policy.model_validate(policy_defaults())


def _merge(default: Any, value: Any) -> Any:
    """`value` over `default`: mappings key by key, anything else replaced whole (validation comes after)."""
    if not isinstance(default, dict) or not isinstance(value, dict):
        return copy.deepcopy(value)
    out = copy.deepcopy(default)
    for key, sub in value.items():
        out[key] = _merge(default[key], sub) if key in default else copy.deepcopy(sub)
    return out


class ConfigIssue(str):
    """One problem of a `.github/sweepbot.yml`: its English text (ending in `(line N)` when the file has the key), and
    for the templates the line and a hint (`hint` names a macro of templates/_config_hint.*.j2, `hint_params`
    its values). A str, so every list of errors stays a list of sentences."""

    line: int | None
    hint: str | None
    hint_params: dict[str, Any]

    def __new__(
        cls,
        text: str,
        line: int | None = None,
        hint: str | None = None,
        hint_params: dict[str, Any] | None = None,
        *,
        names_its_line: bool = False,
    ) -> ConfigIssue:
        issue = super().__new__(cls, f"{text} (line {line})" if line is not None and not names_its_line else text)
        issue.line, issue.hint, issue.hint_params = line, hint, dict(hint_params or {})
        return issue


# Keys of app.yaml that are not the policy: a repository file copied from app.yaml whole or from its `policy:`.
APP_YAML_ROOTS = ("policy", "manifest")


def parse_repo_config(text: str | bytes, defaults: dict[str, Any] | None = None) -> Policy:
    """Parse and validate a `.github/sweepbot.yml`; return the merged policy or raise ConfigError, whose errors
    are ConfigIssues: every key path the file has is given its line, duplicate keys are errors."""
    defaults = policy_defaults() if defaults is None else defaults
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(
            [ConfigIssue(f"not valid YAML{where}: {getattr(exc, 'problem', None) or exc}", hint=None)]
        ) from None
    finally:
        loader.dispose()
    if data is None:
        return Policy.model_validate(defaults)
    lines: dict[str, int] = {}
    errors: list[ConfigIssue] = []
    if node is not None:
        _walk_keys(node, "", lines, errors)
    try:
        policy = Policy.model_validate(_merge(defaults, data))
    except ValidationError as exc:
        found = [_with_line_and_hint(error, lines, defaults) for error in policy_errors(exc)]
        # pydantic lists a model's unknown keys after its fields; the file's order reads better
        errors += sorted(found, key=lambda issue: (issue.line is None, issue.line or 0))
    else:
        errors += [_with_line_and_hint(error, lines, defaults) for error in _rules_across_keys(policy)]
    if errors:
        raise ConfigError(errors)
    return policy


def _walk_keys(
    node: yaml.Node, where: str, lines: dict[str, int], errors: list[ConfigIssue], walked: set[int] | None = None
) -> None:
    """Record the line of every key path in the file; a key given twice in one mapping is an error. Each node is
    walked once: an alias is the node it names, so nested aliases would otherwise be walked exponentially often."""
    walked = set() if walked is None else walked
    if id(node) in walked:
        return
    walked.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            path = f"{where}.{key_node.value}" if where else key_node.value
            line = key_node.start_mark.line + 1
            if key_node.value in first:
                errors.append(
                    ConfigIssue(
                        f"{path}: duplicate key at line {line} (first at line {first[key_node.value]})",
                        line,
                        "duplicate-key",
                        names_its_line=True,
                    )
                )
            else:
                first[key_node.value] = line
                lines[path] = line
            _walk_keys(value_node, path, lines, errors, walked)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[f"{where}[{i}]"] = item.start_mark.line + 1
            _walk_keys(item, f"{where}[{i}]", lines, errors, walked)


_LAST_STEP = re.compile(r"(?:\.[^.\[]+|\[\d+\])$")


def _with_line_and_hint(error: str, lines: dict[str, int], defaults: dict[str, Any]) -> ConfigIssue:
    """The error with the line of its key path (or of the nearest key above it the file has), and its hint."""
    path, _, message = error.partition(": ")
    line, at = None, path
    while at:
        if at in lines:
            line = lines[at]
            break
        shorter = _LAST_STEP.sub("", at)
        at = "" if shorter == at else shorter
    hint, params = None, {}
    if message == "unknown key":
        if path in APP_YAML_ROOTS:
            hint = f"app-yaml-{path}"
        else:
            last = _LAST_STEP.search(path)
            parent, key = (path[: last.start()], last.group()[1:]) if last else ("", path)
            allowed = _keys_at(defaults, parent)
            close = difflib.get_close_matches(key, allowed, n=1)
            hint, params = "unknown-key", {"allowed": allowed, "suggestion": close[0] if close else None}
    return ConfigIssue(error, line, hint, params)


def _keys_at(defaults: dict[str, Any], path: str) -> list[str]:
    """The keys a mapping at `path` (a key path of the errors: `a.b[0].c`) may hold, in app.yaml's order."""
    level: Any = defaults
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        if index:
            level = {k: v for item in level if isinstance(item, dict) for k, v in item.items()}
        elif isinstance(level, dict):
            level = level.get(name, {})
    return list(level) if isinstance(level, dict) else []


def _rules_across_keys(policy: Policy) -> list[str]:
    """Rules across keys, each error naming its key path; every error is listed at once."""
    from bot.rules.commands import command_name_errors  # here, not at the top: this file's imports are not this check's
    from bot.rules.stale_branch import pattern_errors as stale_branch_pattern_errors

    labels = policy.labels
    errors = _sweep_label_errors(labels)
    errors += command_name_errors(policy.commands.names())
    errors += _autolabel_errors(policy.autolabels, _sweep_labels(labels))
    errors += _verified_item_errors(policy.signoff.verified_items)
    errors += _login_list_errors("results.senders", policy.results.senders)
    errors += _login_list_errors("signoff.judge.senders", policy.signoff.judge.senders)
    errors += _owner_list_errors("signoff.sufficient_owners", policy.signoff.sufficient_owners)
    errors += stale_branch_pattern_errors(policy)
    if len(policy.board.label) > LABEL_NAME_LIMIT:
        errors.append(f"board.label: {policy.board.label!r} is longer than GitHub's {LABEL_NAME_LIMIT} characters")
    if len(policy.board.title) > ISSUE_TITLE_LIMIT:
        errors.append(f"board.title: longer than GitHub's {ISSUE_TITLE_LIMIT} characters")
    return errors


def _verified_item_errors(items: tuple[VerifiedItem, ...]) -> list[str]:
    from bot.rules.signoff import CHECKS

    return [
        f"signoff.verified_items[{i}].check: {item.check!r} is not one of the bot's checks ({', '.join(CHECKS)})"
        for i, item in enumerate(items)
        if item.check not in CHECKS
    ]


# A GitHub login, and `name[bot]` for an App's bot account.
LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")


def _login_list_errors(path: str, logins: tuple[str, ...]) -> list[str]:
    return [
        f"{path}[{i}]: {login!r} is not a GitHub login (letters, digits and dashes; `name[bot]` for an App)"
        for i, login in enumerate(logins)
        if not LOGIN.fullmatch(login)
    ]


def _owner_list_errors(path: str, owners: tuple[str, ...]) -> list[str]:
    from bot.rules.codeowners import is_handle

    return [
        f"{path}[{i}]: {owner!r} is not an owner as CODEOWNERS names one (`@user` or `@org/team`)"
        for i, owner in enumerate(owners)
        if not is_handle(owner)
    ]


# GitHub's limits for a label; a longer name or description is refused with a 422.
LABEL_NAME_LIMIT = 50
ISSUE_TITLE_LIMIT = 256
LABEL_DESCRIPTION_LIMIT = 100


def _sweep_labels(labels: Labels) -> dict[str, str]:
    """Every sweep label (primaries and modifiers), compared as label_key, -> the key path that first names it."""
    named: dict[str, str] = {}
    for path, name in _sweep_label_names(labels):
        named.setdefault(label_key(name), path)
    return named


def _sweep_label_names(labels: Labels) -> list[tuple[str, str]]:
    primaries = [(f"labels.primary[{i}].name", label.name) for i, label in enumerate(labels.primary)]
    return primaries + [(f"labels.modifiers.{key}", name) for key, name in labels.modifiers.names().items()]


def _sweep_label_errors(labels: Labels) -> list[str]:
    errors = []
    primaries = labels.primary
    if not primaries:
        errors.append("labels.primary: at least one primary label is required")
    if sum(1 for p in primaries if p.recommended) > 1:
        errors.append("labels.primary: at most one label can be recommended")
    seen: dict[str, tuple[str, str]] = {}
    for path, name in _sweep_label_names(labels):
        errors += _length_errors(path, name, LABEL_NAME_LIMIT)
        if label_key(name) in seen:
            errors.append(_same_label(path, name, *seen[label_key(name)]))
        else:
            seen[label_key(name)] = (path, name)
    return errors


def _autolabel_errors(rules: tuple[AutoLabel, ...], sweep_labels: dict[str, str]) -> list[str]:
    errors = []
    given: dict[str, tuple[str, str]] = {}  # label_key -> (the rule that gives the label, its spelling there)
    for i, rule in enumerate(rules):
        where, label = f"autolabels[{i}]", rule.label
        errors += _length_errors(f"{where}.label", label, LABEL_NAME_LIMIT)
        if label_key(label) in sweep_labels:
            # a path rule would approve every matching PR's sweep, forks included, with the bot's own permission
            errors.append(
                f"{where}.label: {label!r} is a sweep label ({sweep_labels[label_key(label)]}); "
                "sweeps are approved by maintainers, not by path rules"
            )
        if label_key(label) in given:
            other, spelled = given[label_key(label)]
            # two rules for one label would add it and remove it on alternate pushes
            errors.append(
                f"{where}.label: {label!r} is also given by {other}{_ignoring_case(label, spelled)}; "
                "one rule per label: put all its paths in one rule"
            )
        else:
            given[label_key(label)] = (where, label)
        errors += _length_errors(f"{where}.description", rule.description, LABEL_DESCRIPTION_LIMIT)
        if len(rule.color) != 6 or any(c not in "0123456789abcdefABCDEF" for c in rule.color):
            errors.append(f"{where}.color: expected six hex digits, got {rule.color!r}")
        if not rule.paths:
            errors.append(f"{where}.paths: at least one pattern is required")
    return errors


def _length_errors(path: str, text: str, limit: int) -> list[str]:
    if len(text) <= limit:
        return []
    return [f"{path}: {len(text)} characters; GitHub allows at most {limit}"]


def _same_label(path: str, name: str, other: str, spelled: str) -> str:
    return f"{path}: {name!r} is also the label of {other}{_ignoring_case(name, spelled)}"


def _ignoring_case(name: str, spelled: str) -> str:
    return "" if name == spelled else f" ({spelled!r}: GitHub label names ignore case)"
