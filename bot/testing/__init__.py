"""A stateful fake of GitHub's REST API for tests, benchmarks and the sandbox.

`InMemoryGitHub.handle` serves it in-process (an httpx MockTransport or a respx side effect);
`python -m bot.testing.server` serves one over real HTTP (`bot.testing.server.FakeGitHubProcess`).
"""

from bot.testing.memory import InMemoryGitHub
from bot.testing.model import RecordedRequest

__all__ = ["InMemoryGitHub", "RecordedRequest"]
