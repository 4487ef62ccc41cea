"""Prometheus metrics, one registry per running bot."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

CONTENT_TYPE = CONTENT_TYPE_LATEST
# The events whose deliveries are counted by name: the manifest's (app.yaml), and what GitHub sends every App.
# Any other name is counted as "other", so no request (signed or not) adds a series of its own.
COUNTED_EVENTS = frozenset(
    {
        "pull_request",
        "issue_comment",
        "push",
        "workflow_run",
        "repository_dispatch",
        "pull_request_review",
        "pull_request_review_comment",
        "check_run",
        "check_suite",
        "ping",
        "installation",
        "installation_repositories",
        "installation_target",
        "github_app_authorization",
        "meta",
    }
)
OTHER_EVENT = "other"


def counted_event(event: str | None) -> str:
    """The event's name as /metrics counts it: one of COUNTED_EVENTS, else "other"."""
    return event if event in COUNTED_EVENTS else OTHER_EVENT


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.deliveries = Counter(
            "sweepbot_deliveries",
            "Webhook deliveries by event and outcome",
            ["event", "outcome"],
            registry=self.registry,
        )
        self.handler_seconds = Histogram(
            "sweepbot_handler_seconds",
            "Time to process one delivery",
            ["event"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self.github_requests = Counter(
            "sweepbot_github_requests",
            "GitHub API requests by method and status",
            ["method", "status"],
            registry=self.registry,
        )
        self.github_in_flight = Gauge(
            "sweepbot_github_in_flight", "GitHub requests under way now (this process)", registry=self.registry
        )
        self.backlog = Gauge("sweepbot_backlog", "Deliveries waiting or running", registry=self.registry)
        self.replica_lanes = Gauge(
            "sweepbot_replica_lanes",
            "PR lanes this replica holds a lease on (PostgreSQL)",
            ["replica"],
            registry=self.registry,
        )
        self.leases_lost = Counter(
            "sweepbot_leases_lost",
            "Lane leases this replica found run out or taken at a renewal (PostgreSQL), by"
            " outcome: taken_back (run out, nobody took it: renewed, the run went on) or stopped (another replica"
            " took it: the run here stopped)",
            ["outcome"],
            registry=self.registry,
        )
        self.rate_limit_remaining = Gauge(
            "sweepbot_github_rate_limit_remaining",
            "Requests left in the primary rate limit",
            ["installation"],
            registry=self.registry,
        )
        self.last_github_error: dict | None = None
        self.unreconciled: list[dict] = []  # effects GitHub may have done that the bot could not confirm
        self.lost_leases: list[dict] = []  # the last leases lost (PostgreSQL), for /healthz

    def unreconciled_effect(self, text: str) -> None:
        """An effect that is neither confirmed nor sent again: shown in /healthz until a restart."""
        self.unreconciled = (self.unreconciled + [{"effect": text, "at": round(time.time())}])[-20:]

    def lease_lost(self, lane: str, outcome: str) -> None:
        """A lease found run out (`taken_back`) or taken by another replica (`stopped`) at a renewal: counted, and
        shown in /healthz until a restart."""
        self.leases_lost.labels(outcome).inc()
        self.lost_leases = (self.lost_leases + [{"lane": lane, "outcome": outcome, "at": round(time.time())}])[-20:]

    def github_error(self, method: str, path: str, error: str) -> None:
        """Remember the last request that failed for good, for /healthz."""
        self.last_github_error = {"method": method, "path": path, "error": error, "at": round(time.time())}

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Families:
    """A collector that yields families already gathered (the merge of several processes' texts)."""

    def __init__(self, families: list[Metric]):
        self.families = families

    def collect(self) -> list[Metric]:
        return self.families


def merged_exposition(texts: list[bytes]) -> bytes:
    """Several processes' /metrics texts as one: each family once, a sample that more than one reports summed
    (the intake counts the deliveries it accepts, the workers those they finish), a `_created` time the
    earliest."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple, Sample]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text.decode()):
            if family.name not in families:
                families[family.name] = Metric(family.name, family.documentation, family.type)
                values[family.name] = {}
            held = values[family.name]
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                before = held.get(key)
                if before is None:
                    held[key] = sample
                elif sample.name.endswith("_created"):
                    held[key] = sample._replace(value=min(before.value, sample.value))
                else:
                    held[key] = sample._replace(value=before.value + sample.value)
    for name, family in families.items():
        family.samples = list(values[name].values())
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(list(families.values())))
    return generate_latest(registry)
