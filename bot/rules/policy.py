"""The policy as typed, immutable objects: app.yaml's `policy:` merged with a repository's `.github/sweepbot.yml`.

Each model forbids keys it does not name and converts no value (strict: `"yes"` is not true, `12` is not a
string). Lists become tuples, so nothing a handler holds can change the policy another delivery sees. The
defaults are app.yaml's, merged in before validation (bot/core/config.py), so every field here is required.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

from bot.rules.value_kinds import kind_in_words


def _list_as_tuple(value: Any) -> Any:
    # YAML gives lists; strict validation takes only tuples for a tuple field, so a list is converted here and
    # anything else is left for the type check to refuse.
    return tuple(value) if isinstance(value, list) else value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("blank")
    return value


Text = Annotated[str, StringConstraints(min_length=1), AfterValidator(_not_blank)]
Whole = Annotated[int, Field(gt=0)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Paths(_Frozen):
    changelog: Text = Field(description="the performance changelog each benchmark PR appends to")
    codeowners: Text = Field(description="the CODEOWNERS file that says who may sign off")
    checklist: Text = Field(description="the review checklist a sign-off completes")
    benchmark: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)] = Field(
        description="gitignore-style patterns of a benchmark PR's files"
    )
    master_configs: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)] = Field(
        description="the master config files: one block per config key, each naming its runner pool"
    )
    runners: Text = Field(description="the runner pools file (`labels:` pool -> runners)")


class VerifiedItem(_Frozen):
    check: Text = Field(description="checklist, sweep, reuse or codeowner")
    contains: Text = Field(description="a phrase of the checklist item, compared ignoring case")


class Judge(_Frozen):
    enabled: bool
    workflow: Text = Field(description="the judge's workflow file in .github/workflows")
    senders: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)] = Field(
        description="logins the judge's answer is accepted from, besides the App"
    )


class Signoff(_Frozen):
    require_reuse: bool = Field(description="a sign-off fails while no run is pinned")
    sufficient_owners: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)] = Field(
        description="owners (`@user`, `@org/team`) whose sign-off covers every owner group"
    )
    author_may_sign: bool
    verified_items: Annotated[tuple[VerifiedItem, ...], BeforeValidator(_list_as_tuple)]
    judge: Judge


class PrimaryLabel(_Frozen):
    name: Text
    canary: bool = Field(description="the sweep runs the canary first")
    fail_fast: bool = Field(description="the sweep stops at its first failure")
    recommended: bool = Field(description="the label the welcome comment suggests (at most one)")


class _NameTable(_Frozen):
    """A mapping of fixed keys to names (a command's, a label's, a workflow file's)."""

    def names(self) -> dict[str, str]:
        """Key -> name, in the policy's order."""
        return {key: getattr(self, key) for key in type(self).model_fields}


class Modifiers(_NameTable):
    all_evals: Text
    evals_only: Text
    agentx_fast: Text


class Labels(_Frozen):
    primary: Annotated[tuple[PrimaryLabel, ...], BeforeValidator(_list_as_tuple)] = Field(
        description="the labels that approve a sweep"
    )
    modifiers: Modifiers = Field(description="labels that change what an approved sweep runs")


class Sweeps(_Frozen):
    triage_may_start: bool = Field(description="on the repository's own branches, triage labels count too")
    confirm_over: Whole | None = Field(
        description="benchmark points above which a sweep label alone does not start a sweep: a writer confirms"
        " with the check's button (null: never asked)"
    )
    concurrency: dict[Text, Whole] = Field(
        default_factory=dict,
        description="runner pool -> how many sweeps may run on it at once; a pool not named has no cap",
    )


class Board(_Frozen):
    enabled: bool = Field(description="keep one issue listing every open PR the bot tracks")
    title: Text = Field(description="the board issue's title")
    label: Text = Field(description="the label the board issue carries")
    edit_interval: Whole = Field(description="seconds: at most one edit of the board in this time")


class Workflows(_NameTable):
    sweep: Text
    fork_sweep: Text


class Results(_Frozen):
    mode: Literal["service", "none"] = Field(
        description="service: a results service stages and ingests pinned runs; none: there is none, so `/use` "
        "pins and reports but no staging or ingest request is sent"
    )
    repository: Text
    viewer: Text
    stage: Text
    ingest: Text
    senders: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)] = Field(
        description="logins whose callbacks are accepted, besides the App"
    )

    @property
    def enabled(self) -> bool:
        """Whether the bot sends the results service anything (staging at `/use`, ingest at merge): `mode` is
        not "none". Every request to the service asks this first."""
        return self.mode != "none"


MergeMethod = Literal["squash", "merge", "rebase"]


class Merge(_Frozen):
    method: MergeMethod = Field(
        description="how the merge command merges a PR from this repository's own branches (a fork's PR is always "
        "merged with a merge commit)"
    )
    require_signoff: bool = Field(description="the merge command waits for the `signoff` check to pass")


class Limits(_Frozen):
    changelog_bytes: Whole
    changelog_errors: Whole


class Commands(_NameTable):
    """Each command kind's name, as typed after the slash."""

    use: Text
    reuse: Text
    stage: Text
    merge: Text
    help: Text


class AutoLabel(_Frozen):
    label: Text
    paths: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)]
    color: Text = Field(description="six hex digits, no #")
    description: Text


Action = Literal["off", "warn", "refuse"]


class StaleBranch(_Frozen):
    """The stale-branch guard (bot/rules/stale_branch.py): what a PR built on an old base would undo."""

    submodules: Action = Field(description="a submodule pointer moved back or aside from the base's")
    unverified_submodules: Literal["warn", "refuse"] = Field(
        description="a moved submodule whose repository the App cannot read"
    )
    reverted_files: Action = Field(description="a changed file taken back to an older version of the base's")
    revert_refused: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)] = Field(
        description="gitignore-style patterns of files whose revert refuses the sweep even under `warn`"
    )
    history_depth: Annotated[int, Field(gt=0, le=10)] = Field(
        description="how many older versions of a file's base history are compared (1 to 10)"
    )
    changelog_coverage: Action = Field(description="a changed master-config key no appended entry names")
    stale_pin: bool = Field(description="a push after the pin that changes a benchmark file makes the pin stale")
    pin_keeps: Annotated[tuple[Text, ...], BeforeValidator(_list_as_tuple)] = Field(
        description="gitignore-style patterns of files a push may change without making the pin stale"
    )


class Policy(_Frozen):
    """One repository's policy in force."""

    paths: Paths
    checklist_heading: Text
    signoff_phrase: Text
    signoff: Signoff
    docs_url: Text
    labels: Labels
    sweeps: Sweeps
    board: Board
    workflows: Workflows
    results: Results
    merge: Merge
    pr_link_prefix: Text
    limits: Limits
    skip_sweep_marker: Text
    commands: Commands
    autolabels: Annotated[tuple[AutoLabel, ...], BeforeValidator(_list_as_tuple)]
    stale_branch: StaleBranch

    def to_dict(self) -> dict[str, Any]:
        """A plain copy with lists, as the YAML file holds it (for printing and comparing)."""
        return self.model_dump(mode="json")


# pydantic's error types, in the words the configuration's messages use (each followed by ", got <kind>").
_EXPECTED = {
    "model_type": "a mapping",
    "dict_type": "a mapping",
    "model_attributes_type": "a mapping",
    "tuple_type": "a list",
    "list_type": "a list",
    "bool_type": "true or false",
    "string_type": "a non-empty string",
    "string_too_short": "a non-empty string",
    "value_error": "a non-empty string",
    "int_type": "a whole number above 0",
    "greater_than": "a whole number above 0",
}


def key_path(location: tuple[str | int, ...]) -> str:
    """`("labels", "primary", 0, "canary")` as the messages write it: `labels.primary[0].canary`."""
    path = ""
    for step in location:
        path += f"[{step}]" if isinstance(step, int) else (f".{step}" if path else str(step))
    return path


def policy_errors(error: ValidationError) -> list[str]:
    """Each of pydantic's errors as `<key path>: <what is wrong>`."""
    messages = []
    for item in error.errors():
        where = key_path(item["loc"]) or "the file"
        if item["type"] == "extra_forbidden":
            messages.append(f"{where}: unknown key")
        elif item["type"] == "missing":
            messages.append(f"{where}: required")
        elif item["type"] == "literal_error":
            messages.append(f"{where}: expected one of {item['ctx']['expected']}, got {item['input']!r}")
        elif item["type"] == "less_than_equal":
            messages.append(f"{where}: expected at most {item['ctx']['le']}, got {item['input']!r}")
        elif item["type"] == "greater_than":
            messages.append(f"{where}: expected {_EXPECTED[item['type']]}, got {item['input']!r}")
        elif item["type"] in _EXPECTED:
            messages.append(f"{where}: expected {_EXPECTED[item['type']]}, got {kind_in_words(item['input'])}")
        else:
            messages.append(f"{where}: {item['msg']}")
    return messages


def repository_file_schema() -> dict[str, Any]:
    """The JSON Schema of a `.github/sweepbot.yml`: the policy's, with every key of a mapping optional (the file
    is merged key by key over the defaults), while an item of a list (a primary label, an automatic label)
    still needs all its keys, since a list replaces the default whole."""
    schema = Policy.model_json_schema()
    definitions = schema.get("$defs", {})

    def optional_keys(node: dict[str, Any]) -> None:
        node.pop("required", None)
        for value in node.get("properties", {}).values():
            reference = value.get("$ref", "")
            if reference.startswith("#/$defs/"):
                optional_keys(definitions[reference.removeprefix("#/$defs/")])

    optional_keys(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = ".github/sweepbot.yml"
    return schema
