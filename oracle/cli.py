"""The `pagedcheck` command: a thin layer over the library; every subcommand is a function tests call.

Exit status: 0 all green; 1 a divergence or a failed check (the implementation's fault); 2 a usage error
or a grader that cannot run (ours or the caller's).
"""

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Sequence

from oracle.family import families
from oracle.runner import Progress, fuzz

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None


def _output_file(text: str) -> Path:
    path = Path(text)
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"directory {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory")
    return path


def write_json(path: Path, data: dict) -> None:
    try:
        path.write_text(json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def cmd_fuzz(args: argparse.Namespace) -> int:
    family = families()[args.family]
    impl = args.impl or family.default_impl
    try:
        factory = family.load_adapter(impl)
    except ValueError as exc:
        raise UsageError(f"--impl {impl}: {exc}") from None
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    progress = None if args.quiet else Progress(args.examples)
    report = fuzz(family, impl, factory, examples=args.examples, steps=args.steps, seed=seed, progress=progress)
    if progress:
        progress.done()
    stats = report.stats
    print(
        f"{family.name} {impl}: {stats.examples} examples, {stats.steps} steps in {report.seconds:.1f} s "
        f"({stats.steps / max(report.seconds, 1e-9):.0f} steps/s), seed {seed}"
    )
    if report.passed:
        print("OK: the implementation agreed with the model after every step")
    else:
        print("\nMinimal failing program (run it with python):\n")
        print("\n".join(report.program))
        print(f"\nFirst divergence: {report.divergence}")
        print(f"Rerun: pagedcheck fuzz --impl {impl} --examples {args.examples} --steps {args.steps} --seed {seed}")
    if args.json:
        write_json(args.json, report.as_dict())
    return EXIT_OK if report.passed else EXIT_FAILED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pagedcheck",
        description="Model-based stateful testing for paged KV-cache memory managers.",
        epilog="Exit status: 0 green, 1 the implementation failed, 2 usage error or the grader could not run.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    fuzz_p = sub.add_parser(
        "fuzz",
        help="fuzz an implementation against the model",
        description="Drive an implementation and the model with the same random programs; stop at the first "
        "disagreement and print the smallest program that shows it.",
    )
    fuzz_p.add_argument("--family", choices=sorted(families()), default="hw3", help="allocator family (default: hw3)")
    fuzz_p.add_argument(
        "--impl",
        metavar="IMPL",
        help="`engine` (the built-in Python engine, the default) or a Python module `pkg.module[:attr]`",
    )
    fuzz_p.add_argument("--examples", type=_positive, default=200, help="programs to run (default: 200)")
    fuzz_p.add_argument("--steps", type=_positive, default=50, help="calls per program, at most (default: 50)")
    fuzz_p.add_argument("--seed", type=_seed, help="random seed; the same seed gives the same run (default: random)")
    fuzz_p.add_argument("--json", type=_output_file, metavar="FILE", help="write statistics and any failure as JSON")
    fuzz_p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    fuzz_p.set_defaults(run=cmd_fuzz)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"pagedcheck {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"pagedcheck {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
