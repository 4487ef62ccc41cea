"""Feature handlers, one module per feature; handlers/registry.py lists them and builds their routers. No
feature imports another: what they share is in handlers/pr_state.py (PR state), handlers/commands.py (the
command dispatcher) and handlers/paths.py (path patterns)."""
