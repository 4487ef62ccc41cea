"""sweepbot framework: intake, journal, routing, GitHub client, config, templates, comments."""
