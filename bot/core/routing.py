"""An event's handlers in the order they were added: the order of a delivery's writes is the registry's, never
the handlers' names."""

from __future__ import annotations

from typing import Any

from gidgethub import routing, sansio


class OrderedRouter(routing.Router):
    """gidgethub's router, whose `fetch` gives an event's handlers in the order they were first added (a tuple;
    gidgethub gives a set). Built from other routers, it adds theirs in the order the routers are given."""

    def __init__(self, *other_routers: routing.Router) -> None:
        self._rank: dict[Any, int] = {}
        super().__init__(*other_routers)

    def add(self, func: Any, event_type: str, **data_detail: Any) -> None:
        self._rank.setdefault(func, len(self._rank))
        super().add(func, event_type, **data_detail)

    def fetch(self, event: sansio.Event) -> tuple[Any, ...]:  # type: ignore[override]
        return tuple(sorted(super().fetch(event), key=self._rank.__getitem__))


def ordered(router: routing.Router, event: sansio.Event) -> tuple[Any, ...]:
    """The handlers `router` has for `event`, in the order they run: an OrderedRouter's order; a plain router's
    (a test's) by module and name, which is at least the same from run to run."""
    found = router.fetch(event)
    if isinstance(router, OrderedRouter):
        return tuple(found)
    return tuple(sorted(found, key=lambda handler: (handler.__module__, handler.__name__)))
