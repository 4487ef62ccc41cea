"""Feature handlers, one module per feature; `router` holds them all."""

from gidgethub import routing

from handlers import autolabel, config_refresh, help_command, welcome

router = routing.Router(welcome.router, autolabel.router, help_command.router, config_refresh.router)
