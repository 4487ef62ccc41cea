"""Feature handlers, one module per feature (handlers/registry.py lists them and builds their routers); the
modules the features share are handlers/pr_state.py and handlers/paths.py."""
