"""The `pagedcheck` command: the top-level parser and the dispatch to its commands (oracle/commands/, one
module per command group); every command is a function tests call through `main`.

Exit status: 0 all green; 1 a divergence or a failed check (the implementation's fault); 2 a usage error
or a grader that cannot run (ours or the caller's).
"""

import argparse
import sys
from importlib.metadata import version
from typing import NoReturn, Sequence

from oracle.commands import batch, campaign, fuzz, grade, gradescope, mutation
from oracle.commands.status import EXIT_USAGE, UsageError
from oracle.hypothesis_home import keep_hypothesis_files_in_cache
from oracle.printable import Printable

COMMANDS = (fuzz, campaign, grade, batch, gradescope, mutation)  # each registers its subcommands; --help lists them in this order


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (no usage block) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pagedcheck",
        description="Model-based stateful testing for paged KV-cache memory managers.",
        epilog="Exit status: 0 green, 1 the implementation failed, 2 usage error or the grader could not run.",
    )
    parser.add_argument("--version", action="version", version=f"pagedcheck {version('pagedcheck')}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    keep_hypothesis_files_in_cache()  # no .hypothesis/ in the folder the command runs in
    streams = sys.stdout, sys.stderr  # what we print carries submission text: its control characters escaped
    sys.stdout, sys.stderr = Printable(sys.stdout), Printable(sys.stderr)  # type: ignore[assignment]
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"pagedcheck {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"pagedcheck {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout, sys.stderr = streams


if __name__ == "__main__":
    sys.exit(main())
