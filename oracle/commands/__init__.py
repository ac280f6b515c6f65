"""`pagedcheck`'s commands, one module per command group: each registers its parser and runs it (oracle/cli.py)."""
