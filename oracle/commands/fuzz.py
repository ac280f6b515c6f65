"""`pagedcheck fuzz`: an implementation and the model driven by the same random programs (oracle/runner.py)."""

import argparse
import random
import sys
from pathlib import Path

from oracle.commands.options import add_quiet_option, add_site_option, output_file, positive, seed_value
from oracle.commands.outputs import write_html, write_json
from oracle.commands.status import EXIT_FAILED, EXIT_OK, UsageError
from oracle.family import DEFAULT_FAMILY, draws_page, families
from oracle.page import fuzz_items
from oracle.runner import Progress, fuzz


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fuzz",
        help="fuzz an implementation against the model",
        description="Drive an implementation and the model with the same random programs; stop at the first "
        "disagreement and print the smallest program that shows it. A C file that only warns under the spec's "
        "flags is judged as `grade` judges it: the spec's -Werror makes the warnings errors, so the run exits 1 "
        "whatever the fuzzing finds (it fuzzes the build without -Werror). Exit 0 agreed, 1 a divergence or a "
        "build that warns, 2 usage error (a path that does not exist, a file that does not compile).",
    )
    p.add_argument("--family", choices=sorted(families()),
                   help=f"allocator family (default: {DEFAULT_FAMILY}, or the --replay campaign's)")
    p.add_argument(
        "--impl",
        metavar="IMPL",
        help="`engine` (the family's built-in engine, the default); hw3: a C file or a Python module "
        "`pkg.module[:attr]`; prefix: `SHAPE:pkg.module[:attr][@POLICY]`, `vllm:DIR[@POLICY]` (vLLM's own "
        "KV-cache manager from an unzipped wheel) or `path/to/adapter.py:Class[@POLICY]` (oracle/prefix/README.md)",
    )
    p.add_argument("--examples", type=positive, default=200, help="programs to run (default: 200)")
    p.add_argument("--steps", type=positive, default=50, help="calls per program, at most (default: 50)")
    p.add_argument("--seed", type=seed_value, help="random seed; the same seed gives the same run (default: random)")
    p.add_argument("--json", type=output_file, metavar="FILE", help="write statistics and any failure as JSON")
    p.add_argument("--html", type=output_file, metavar="FILE",
                   help="write one self-contained HTML page picturing the divergence (expected beside actual); the "
                   "command prints where it wrote it")
    p.add_argument("--replay", type=Path, metavar="DIR",
                   help="replay the failures a campaign's workers stored in DIR (`pagedcheck campaign --db DIR`) instead "
                   "of generating programs: the first that fails is shrunk and printed as usual. Family, IMPL and "
                   "--steps default to the campaign's (give --impl where the implementation has another path here)")
    add_site_option(p, "fuzz runs the implementation in this process, so DIR goes last on this process's import "
                    "path, where `grade --site DIR` gives the same folder to its sandbox")
    add_quiet_option(p, "no progress line")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    campaign = None
    if args.replay is not None:
        from oracle.campaign import Campaign

        try:
            campaign = Campaign.read(args.replay)
        except ValueError as exc:
            raise UsageError(f"--replay {exc}") from None
        if args.family and args.family != campaign.family:
            raise UsageError(f"--replay {args.replay} is a campaign of the {campaign.family} family, not {args.family}")
    family = families()[args.family or (campaign.family if campaign else DEFAULT_FAMILY)]
    impl = args.impl or (campaign.impl if campaign else family.default_impl)
    steps = campaign.steps if campaign else args.steps
    if args.html and not draws_page(family):
        raise UsageError(f"--html: the {family.name} family draws no HTML page")
    if args.site is not None:
        if not args.site.is_dir():
            raise UsageError(f"--site {args.site}: no such folder (make one with `pip install --target DIR PACKAGE...`)")
        sys.path.append(str(args.site.resolve()))
    try:
        factory = family.load_adapter(impl)
    except ValueError as exc:
        raise UsageError(f"--impl {impl}: {exc}") from None
    faults = getattr(factory, "faults", ())  # rules broken at build, judged as `grade` judges them
    for fault in faults:
        print(f"{impl}: {fault}\n(fuzzing the build without -Werror; the spec fails it all the same)\n")
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    progress = None if args.quiet else Progress(args.examples)
    report = fuzz(family, impl, factory, examples=args.examples, steps=steps, seed=seed, progress=progress,
                  replay=args.replay.resolve() if campaign else None)
    if progress:
        progress.done()
    stats = report.stats
    if campaign:
        print(f"replayed the failures stored in {args.replay.resolve() / 'examples'}")
    print(
        f"{family.name} {impl}: {stats.examples} examples, {stats.steps} steps in {report.seconds:.1f} s "
        f"({stats.steps / max(report.seconds, 1e-9):.0f} steps/s)" + ("" if campaign else f", seed {seed}")
        + (f"; shrinking: {stats.shrink_replays} replays" if stats.shrink_replays else "")
    )
    figures = family.describe_run(stats) if family.describe_run else ""
    if figures:
        print(figures)
    if report.passed and campaign:
        print("OK: no failure stored in the campaign fails against this implementation")
    elif report.passed:
        print("OK: the implementation agreed with the model after every step"
              + (", but it does not build under the spec's flags (see above)" if faults else ""))
    else:
        told = family.describe_failure(report.failure, impl) if family.describe_failure else []
        if told:
            print("\n" + "\n".join(told))
        print(f"\n{'The same program for pagedcheck' if told else 'Minimal failing program'} (run it with python):\n")
        print("\n".join(report.program))
        print(f"\nFirst divergence: {report.divergence}")
        if report.cut_short:
            print(f"Shrinking stopped at its budget ({stats.shrink_replays} replays): the program may not be minimal")
        print(f"Rerun: pagedcheck fuzz --replay {args.replay} --impl {impl}" if campaign else
              f"Rerun: pagedcheck fuzz --family {family.name} --impl {impl} --examples {args.examples} --steps {args.steps} --seed {seed}")
    if args.json:
        write_json(args.json, report.as_dict())
    if args.html:
        write_html(family, args.html, f"pagedcheck fuzz {impl} (seed {seed})", fuzz_items(report, family, factory))
    return EXIT_OK if report.passed and not faults else EXIT_FAILED
