"""A feature's handlers, typed; an event's handlers in the order they were added: the order of a delivery's writes
is the registry's, never the handlers' names."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import ParamSpec, TypeVar, overload

from gidgethub import routing, sansio

from bot.core.context import Context
from bot.effects.actions import Action

# What a handler returns is what the framework writes; None (gidgethub's own callbacks, a test's) writes nothing.
Handler = Callable[[sansio.Event, Context], Awaitable[Sequence[Action] | None]]
H = TypeVar("H", bound=Handler)
P = ParamSpec("P")


class Router(routing.Router):
    """gidgethub's router, for handlers: `add` and `register` take a function of (event, context) that returns the
    actions it decided on (gidgethub's types want callbacks that return nothing)."""

    def add(self, func: Handler, event_type: str, **data_detail: object) -> None:
        super().add(func, event_type, **data_detail)  # type: ignore[arg-type]  # gidgethub discards what it returns

    def register(self, event_type: str, **data_detail: object) -> Registration:
        return Registration(self, event_type, data_detail)


class Registration:
    """`@router.register(event_type, **data_detail)`: adds the handler it decorates and gives it back."""

    def __init__(self, router: Router, event_type: str, data_detail: dict[str, object]) -> None:
        self.router, self.event_type, self.data_detail = router, event_type, data_detail

    @overload
    def __call__(self, func: H) -> H: ...

    @overload  # gidgethub's own kind of callback, which returns nothing: what its `register` promises to take
    def __call__(self, func: Callable[P, Awaitable[None]]) -> Callable[P, Awaitable[None]]: ...

    def __call__(self, func: Handler | Callable[..., Awaitable[None]]) -> Handler | Callable[..., Awaitable[None]]:
        self.router.add(func, self.event_type, **self.data_detail)
        return func


class OrderedRouter(Router):
    """A router whose `in_order` gives an event's handlers in the order they were first added (gidgethub's `fetch`
    gives a set). Built from other routers, it adds theirs in the order the routers are given."""

    def __init__(self, *other_routers: routing.Router) -> None:
        self._rank: dict[Handler, int] = {}
        super().__init__(*other_routers)

    def add(self, func: Handler, event_type: str, **data_detail: object) -> None:
        self._rank.setdefault(func, len(self._rank))
        super().add(func, event_type, **data_detail)

    def in_order(self, event: sansio.Event) -> tuple[Handler, ...]:
        return tuple(sorted(self.fetch(event), key=self._rank.__getitem__))


def ordered(router: routing.Router, event: sansio.Event) -> tuple[Handler, ...]:
    """The handlers `router` has for `event`, in the order they run: an OrderedRouter's order; a plain router's
    (a test's) by module and name, which is at least the same from run to run."""
    if isinstance(router, OrderedRouter):
        return router.in_order(event)
    return tuple(sorted(router.fetch(event), key=lambda handler: (handler.__module__, handler.__name__)))
