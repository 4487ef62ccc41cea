"""One delivery's processing: the context handlers read through, policy, repository config, templates."""
