"""The process: command line, runtime wiring, webhook server, sandbox."""
