from pathlib import Path

import httpx
import hypothesis
import pytest
import respx

from bot.testing import InMemoryGitHub

# No timing assertions in tests: Hypothesis's default 200 ms deadline per example is one, and it failed
# test_results_callbacks once on a loaded 2-core machine. Speed is measured by bench/, not here.
hypothesis.settings.register_profile("sweepbot", deadline=None)
hypothesis.settings.load_profile("sweepbot")


@pytest.fixture(autouse=True)
def fresh_commit_caches():
    """The gate keeps what it read per commit SHA (on GitHub a SHA names one content for ever); the fake's SHAs
    are made from a PR's number, so two tests' PR 60 share them: each test starts with empty caches."""
    from handlers import pr_state, sweep_gate

    sweep_gate._changelog_checks.clear()
    sweep_gate._commits.clear()
    pr_state.forget_guard_reads()
    sweep_gate._key_costs.clear()  # and the master configs' costs and the job history, per process
    sweep_gate._job_history.clear()
    sweep_gate._timed_runs.clear()
    yield


LAYOUTS = ("inline", "apart")


@pytest.fixture
def layout(request) -> str:
    """Where the bot's workers run: "inline" (on the test's own loop, the default) or "apart" (in a process of
    their own, as live `sweepbot serve` runs them, talking to the fake GitHub over real HTTP). A test asks for
    both with `@both_layouts`."""
    return getattr(request, "param", "inline")


both_layouts = pytest.mark.parametrize("layout", LAYOUTS, indirect=True)


@pytest.fixture
def github(layout):
    """The shared stateful fake GitHub; every httpx request in a test goes to it (respx). In the "apart" layout
    it answers at a loopback address of its own too, served by the harness, for the workers' process."""
    if layout == "apart":
        from harness import free_port

        fake = InMemoryGitHub(f"http://127.0.0.1:{free_port()}")
    else:
        fake = InMemoryGitHub()
    host = httpx.URL(fake.base_url)
    # Routes not matched here (any other host) raise respx's AllMockedAssertionError.
    with respx.mock(assert_all_called=False) as router:
        router.route(host=host.host, **({"port": host.port} if host.port else {})).mock(side_effect=fake.handle)
        yield fake


# -- the tiers: every test is marked rules, handler, live, process or browser (tests/tiers.py) ------------------

from tiers import assign as assign_tiers  # noqa: E402


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items):
    assign_tiers(items)


# -- the bot under test ------------------------------------------------------------------------

from harness import REPO, start_harness, stop_harness  # noqa: E402

from handlers.registry import PR_WORKFLOW, router_without  # noqa: E402
from handlers.registry import router as full_router  # noqa: E402

CHANGELOG = "inferencex-e2e/perf-changelog.yaml"


@pytest.fixture(scope="session")
def app_key() -> str:
    """One RSA key for the App per test session (generating one takes a while)."""
    from bot.app.sandbox import _generate_key

    return _generate_key()


def seed(fake) -> None:
    """The repository most tests use: default branch main, PR #1 from a fork touching the changelog."""
    fake.add_repo(REPO, default_branch="main", installation_id=1)
    fake.set_permission(REPO, "maintainer", "write")
    fake.add_pull(
        REPO, number=1, title="MI355X recipe", user="partner", head_repo="partner/InferenceX", files=[CHANGELOG]
    )


@pytest.fixture
async def make_harness(github, tmp_path, app_key, layout):
    """Start a bot (settings overridable) against the fake GitHub; stopped at teardown. In the "apart" layout
    the workers run in their own process: `leave_out` names the features its router leaves out (a router object
    cannot cross), and `patches` what the test monkeypatched that the workers' process must see too
    (tests/apart_worker.py)."""
    started = []

    async def make(*, leave_out: tuple[str, ...] | None = None, patches: dict | None = None, **changes):
        if not github.has_repo(REPO):
            seed(github)
        # the welcome and the autolabels, not the PR workflow (handlers.registry.PR_WORKFLOW): see there
        if "router" not in changes:
            changes["router"] = router_without(*PR_WORKFLOW)
            leave_out = PR_WORKFLOW if leave_out is None else leave_out
        elif changes["router"] is full_router and leave_out is None:
            leave_out = ()
        if layout == "apart":
            if leave_out is None:
                raise ValueError("the apart layout needs the features left out (leave_out=), not a router")
            changes.update(apart={"leave_out": list(leave_out), "patches": patches or {}})
        h = await start_harness(tmp_path, github, app_key, **changes)
        started.append(h)
        return h

    yield make
    for h in started:
        await stop_harness(h)


@pytest.fixture
async def harness(make_harness):
    return await make_harness()


# -- the real upstream files ------------------------------------------------------------------

# Real files of the upstream benchmark repository, kept in the repository as test data (not shipped): where they
# come from is tests/data/inferencex/SOURCE.md.
REAL_DATA = Path(__file__).resolve().parent / "data" / "inferencex"


@pytest.fixture(scope="session")
def real_data() -> Path:
    """The folder of real upstream InferenceX files (tests/test_real_data.py checks that each is there)."""
    return REAL_DATA
