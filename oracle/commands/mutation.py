"""`pagedcheck mutation`: how strong a test suite is. A mutmut campaign over a family's engine, or with --c
the grader's strength on C (mutation/README.md)."""

import argparse
import sys
from pathlib import Path

from oracle.commands.options import add_family_option, add_quiet_option, chosen_family, fraction, output_file, positive
from oracle.commands.outputs import write_json
from oracle.commands.status import EXIT_FAILED, EXIT_OK, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mutation",
        help="measure test strength: the mutation score of our suite on the Python engine (mutmut)",
        description="Run a clean mutmut campaign over the Python engine from a pagedcheck checkout (fresh "
        "mutants/), with the suite's mutation test selection; print a summary with every untriaged survivor's "
        "diff. Exit 0 score >= threshold and no mutant without tests, 1 otherwise, 2 usage error.",
    )
    add_family_option(p, "whose engine to mutate")
    p.add_argument("--jobs", type=positive, default=2, help="mutants tested at once (mutmut --max-children; default: 2)")
    p.add_argument("--threshold", type=fraction, default=0.95, help="lowest passing score (default: 0.95)")
    p.add_argument("--json", type=output_file, metavar="FILE", help="write the counts, score and survivors as JSON")
    add_quiet_option(p)
    p.add_argument(
        "--c", nargs="?", const="",
        metavar="PATH", help="instead: grader strength on C. Mutate a model solution (default: the family's C reference), "
        "grade every compiling mutant with the real grader, report killed / survived / equivalent",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """A clean mutmut campaign over the family's engine, or with --c the C campaign."""
    import importlib.util

    if args.c is not None:
        return run_c(args)

    from mutation import python as campaign

    family = chosen_family(args)
    if family.mutation is None:
        raise UsageError(f"--family {family.name}: this family has no mutation campaign")
    if importlib.util.find_spec("mutmut") is None:
        raise UsageError("mutmut is not installed: pip install -e '.[dev]'")
    try:
        root = campaign.find_checkout(Path.cwd())
        if not args.quiet:
            print(f"mutation: running mutmut on {family.mutation.label} of {root} with {args.jobs} jobs (a few "
                  "minutes)", file=sys.stderr)
        result = campaign.run_target(root, family.mutation, jobs=args.jobs)
    except campaign.CampaignError as exc:
        raise UsageError(str(exc)) from None
    return _verdict(args, campaign.render(result, args.threshold), result)


def run_c(args: argparse.Namespace) -> int:
    """Grader strength on C: mutants of a model solution, each graded by the real grader (mutation/README.md)."""
    from mutation import c_campaign

    family = chosen_family(args)
    reference = family.mutation.c_reference if family.mutation else None
    if not args.c and reference is None:
        raise UsageError(f"--family {family.name}: this family grades no C, so it has no C campaign")
    source = Path(args.c) if args.c else reference
    assert source is not None
    if not source.is_file():
        raise UsageError(f"--c {args.c}: no such file")
    progress = None if args.quiet else (lambda line: print(f"mutation: {line}", file=sys.stderr))
    try:
        result = c_campaign.run_campaign(source, jobs=args.jobs, progress=progress)
    except c_campaign.CampaignError as exc:
        raise UsageError(str(exc)) from None
    return _verdict(args, c_campaign.render(result, args.threshold), result)


def _verdict(args: argparse.Namespace, summary: str, result) -> int:
    """Prints a campaign's summary, writes --json, and passes it when its score reaches --threshold."""
    print(summary)
    if args.json:
        write_json(args.json, result.as_dict(args.threshold))
    return EXIT_OK if result.passed(args.threshold) else EXIT_FAILED
