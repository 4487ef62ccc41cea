"""Label events in bursts, as property: whatever maintainers click, a sweep starts only for a state the labels
settled on, once, and the run left going is the one the final labels ask for.

A maintainer's label changes on one same-repository PR come in segments: inside a segment each event follows the
last well within the settle (the bot waits `SETTLE` after each label event before it decides, and a later one
waiting in the lane takes the decision over); between segments the bot settles. The model, after each segment:

- the labels ask for a sweep when exactly one primary is on the PR (modifiers only with a primary);
- a segment that added or removed a primary or a modifier asks for a new run when the labels ask for one
  (docs/spec.md, "Sweep labels": adding or removing either restarts the sweep); one that changed only unrelated
  labels asks for none;
- every earlier run is cancelled when a new one starts or the labels ask for none.

Every label delivery is handled once and none fails. So the dispatches, in order, are exactly the segment-ends that
asked for a new run, each with that end's labels (never an intermediate state), and at most one run is left going: the
final labels' own, when they ask for one. Run in both layouts: the workers on the test's loop, and in their own process
as production runs them.
"""

from __future__ import annotations

import itertools

import pytest
from conftest import both_layouts
from harness import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sweep_gate import APART_PATCHES, inputs, no_merge_wait, open_pull, send_only  # noqa: F401

from bot.app.sandbox import add_sweep_workflows
from handlers import registry

PRIMARIES = ("full-sweep-fail-fast", "full-sweep-enabled", "non-canary-full-sweep-enabled")
MODIFIERS = ("all-evals", "evals-only", "agentx-fast")
UNRELATED = ("documentation",)
LABELS = PRIMARIES + MODIFIERS + UNRELATED
SETTLE = 1.0  # seconds: a segment's events are posted in milliseconds, so each follows the last well within it
EXAMPLES = 12  # per layout; each example settles once per segment, so an example takes about a second a segment

# Each example is a fresh PR on the one bot the test started (starting a bot, or a workers' process, per example
# would cost more than the example): the function-scoped fixtures are shared across examples on purpose.
PROPERTY = settings(
    max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None, derandomize=False
)

segments = st.lists(
    st.lists(st.tuples(st.booleans(), st.sampled_from(LABELS)), min_size=1, max_size=5), min_size=1, max_size=3
)
numbers = itertools.count(100)


def wanted(labels: set[str]) -> dict[str, str] | None:
    """The sweep the labels ask for (the inputs that show it), or None."""
    primaries = [name for name in PRIMARIES if name in labels]
    if len(primaries) != 1:
        return None
    return {
        "sweep-label": primaries[0],
        "canary": str(primaries[0] != "non-canary-full-sweep-enabled").lower(),
        "fail-fast": str(primaries[0] == "full-sweep-fail-fast").lower(),
        **{name: str(name in labels).lower() for name in MODIFIERS},
    }


def shown(run_inputs: dict[str, str]) -> dict[str, str]:
    return {k: run_inputs[k] for k in ("sweep-label", "canary", "fail-fast", *MODIFIERS)}


@pytest.fixture
async def bot(repo_ready, make_harness):
    return await make_harness(router=registry.router, settle_seconds=SETTLE, patches=APART_PATCHES)


@pytest.fixture
def repo_ready(github):
    github.add_repo(REPO, default_branch="main", installation_id=1)
    github.set_permission(REPO, "maintainer", "write")
    add_sweep_workflows(github, REPO)
    return github


@both_layouts
@PROPERTY
@given(segments)
async def test_a_sweep_starts_only_for_settled_labels_and_the_final_ones_run(bot, layout, segments):
    github = bot.github
    number = next(numbers)
    open_pull(github, number)
    on_pr: set[str] = set()
    expected: list[dict[str, str]] = []
    sent: list[str] = []
    for s, events in enumerate(segments):
        changed = False
        for e, (add, name) in enumerate(events):
            if add == (name in on_pr):
                continue  # adding a label already there, or removing one that is not, is no event
            (github.label_issue if add else github.unlabel_issue)(REPO, number, name, actor="maintainer")
            (on_pr.add if add else on_pr.discard)(name)
            changed |= name not in UNRELATED
            sent.append(f"{layout}-{number}-{s}-{e}")
            await send_only(bot, number, "labeled" if add else "unlabeled", name, delivery=sent[-1])
        await bot.idle()
        rows = [await bot.journal_row(delivery) for delivery in sent]
        assert [(row.status, row.attempts) for row in rows] == [("done", 1)] * len(sent), (
            f"every label delivery handled once, none failed: {[row.error for row in rows]}"
        )
        want = wanted(on_pr)
        if want is not None and changed:
            expected.append(want)
        runs = [r for r in github.runs(REPO, "run-sweep.yml") if r["inputs"].get("pr-number") == str(number)]
        assert [shown(inputs(github, r)) for r in runs] == expected, f"after segment {s + 1}: {sorted(on_pr)}"
        going = [r for r in runs if r["conclusion"] != "cancelled"]
        assert len(going) == (1 if want is not None else 0), f"runs left going after segment {s + 1}"
        if want is not None:
            assert shown(inputs(github, going[0])) == want
