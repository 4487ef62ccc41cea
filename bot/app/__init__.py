"""The process: command line, runtime wiring, the webhook server and its signature check, the sandbox."""
