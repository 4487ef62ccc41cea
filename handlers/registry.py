"""The features the bot runs, by name, and their routers: `router` holds them all (what `sweepbot serve` runs)."""

from gidgethub import routing

from handlers import autolabel, config_refresh, help_command, reuse_command, signoff, staging, sweep_gate, welcome

FEATURES = {
    "welcome": welcome.router,
    "autolabel": autolabel.router,
    "help": help_command.router,
    "config_refresh": config_refresh.router,
    "sweep_gate": sweep_gate.router,
    "reuse": reuse_command.router,
    "staging": staging.router,
    "signoff": signoff.router,
}

router = routing.Router(*FEATURES.values())

# The pull-request workflow: the gate, reuse pins and sign-offs read each other's state. Framework tests and
# benches leave them out (they count the welcome's and the autolabels' requests); their own tests ask for all.
PR_WORKFLOW = ("sweep_gate", "reuse", "signoff")


def router_of(*names: str) -> routing.Router:
    """Only some features (tests and benchmarks that measure one feature's requests)."""
    return routing.Router(*(FEATURES[name] for name in names))


def router_without(*names: str) -> routing.Router:
    return router_of(*(name for name in FEATURES if name not in names))
