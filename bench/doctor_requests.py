"""What one `sweepbot doctor` run asks of GitHub: its requests, by kind, for installs of growing size.

Each install is the in-memory fake GitHub holding a correct install (the App as app.yaml's manifest asks, the
webhook URL on record, one delivery in the log) with N benchmark repositories, each with a valid
.github/sweepbot.yml naming one shared results repository and both sweep workflows, all in one installation.
Printed: the requests made with the App's JWT (not counted against any rate limit), the installation token
requests, and the requests made with installation tokens (counted against the installation's 5,000 an hour), and
that every check passed.

    .venv/bin/python bench/doctor_requests.py [--repos 1,5,20]
"""

from __future__ import annotations

import argparse
import asyncio
import io

import httpx

from bot.app.doctor import doctor
from bot.app.sandbox import _generate_key
from bot.core.config import load_app_yaml
from bot.github.client import GitHubApp
from bot.rules.gate import DISPATCH_INPUTS, FORK_INPUTS
from bot.telemetry.metrics import Metrics
from bot.testing import InMemoryGitHub

HOOK = "https://bot.example.com/webhook"
RESULTS = "acme/results"


def install(repos: int, key: str) -> InMemoryGitHub:
    fake = InMemoryGitHub()
    manifest = load_app_yaml()["manifest"]
    fake.set_app_key(key)
    fake.configure_app(
        permissions=dict(manifest["default_permissions"]), events=list(manifest["default_events"]), hook_url=HOOK
    )
    fake.add_repo(RESULTS, installation_id=1)
    for n in range(repos):
        name = f"acme/bench-{n}"
        fake.add_repo(name, installation_id=1)
        fake.set_file(name, ".github/sweepbot.yml", f"results:\n  repository: {RESULTS}\n")
        fake.add_workflow(name, "run-sweep.yml", inputs={i: {"required": True} for i in DISPATCH_INPUTS})
        fake.add_workflow(name, "e2e-tests.yml", inputs={i: {"required": True} for i in FORK_INPUTS})
    fake.add_hook_delivery("pull_request", action="opened")
    return fake


async def measure(repos: int, key: str) -> tuple[int, int, int, int]:
    fake = install(repos, key)
    http = httpx.AsyncClient(transport=httpx.MockTransport(fake.handle), base_url=fake.base_url)
    app = GitHubApp(app_id="1", private_key=key, api_url=fake.base_url, metrics=Metrics(), http=http)
    out = io.StringIO()
    try:
        code = await doctor(app, out, url=HOOK)
    finally:
        await app.close()
    if code != 0:
        raise SystemExit(f"doctor failed on a correct install:\n{out.getvalue()}")
    tokens = fake.count("POST", r"/access_tokens$")
    with_jwt = fake.count(None, r"^/app(/|$)") - tokens
    return with_jwt, tokens, len(fake.requests) - with_jwt - tokens, len(out.getvalue().splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", default="1,5,20", help="benchmark repositories per install, comma-separated")
    counts = [int(n) for n in parser.parse_args().repos.split(",")]
    key = _generate_key()
    print("| benchmark repositories | requests with the JWT | token requests | installation requests | lines |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for repos in counts:
        jwt_requests, tokens, installation, lines = asyncio.run(measure(repos, key))
        print(f"| {repos} | {jwt_requests} | {tokens} | {installation} | {lines} (all ✅) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
