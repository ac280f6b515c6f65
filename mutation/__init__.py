"""Test strength for pagedcheck: `pagedcheck mutation` and its triage (see README.md in this folder)."""
