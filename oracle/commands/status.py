"""How a command ends: its exit status (0 green, 1 the implementation failed, 2 usage: oracle/cli.py), and the
usage error that is one line on stderr."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""
