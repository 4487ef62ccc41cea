"""The pure rules: data in, decisions out; no I/O, no GitHub client."""
