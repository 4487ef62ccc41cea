"""Feature handlers, one module per feature; `router` holds them all."""

from gidgethub import routing

from handlers import autolabel, config_refresh, help_command, reuse_command, staging, sweep_gate, welcome

FEATURES = {
    "welcome": welcome.router,
    "autolabel": autolabel.router,
    "help": help_command.router,
    "config_refresh": config_refresh.router,
    "sweep_gate": sweep_gate.router,
    "reuse": reuse_command.router,
    "staging": staging.router,
}

router = routing.Router(*FEATURES.values())


def router_of(*names: str) -> routing.Router:
    """Only some features (tests and benchmarks that measure one feature's requests)."""
    return routing.Router(*(FEATURES[name] for name in names))


def router_without(*names: str) -> routing.Router:
    return router_of(*(name for name in FEATURES if name not in names))
