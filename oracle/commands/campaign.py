"""`pagedcheck campaign`: a family's state machine against one implementation under HypoFuzz, workers sharing
one example database (oracle/campaign.py); `pagedcheck fuzz --replay DIR` replays what they find."""

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from oracle.commands.options import add_family_option, chosen_family, positive, seconds
from oracle.commands.status import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError
from oracle.family import AdapterFactory, Family

if TYPE_CHECKING:
    from oracle.campaign import Campaign


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "campaign",
        help="fuzz an implementation for hours under HypoFuzz, workers sharing one example database",
        description="Write a campaign folder (DIR: the family's state machine for IMPL as a test HypoFuzz collects, "
        "and its example database) and run HypoFuzz on it with WORKERS processes until it finds a failure or "
        "--seconds pass. Start it again on the same DIR (from any machine that sees DIR) to add workers or go on. "
        "Replay and shrink what it found anywhere with `pagedcheck fuzz --replay DIR`. Needs HypoFuzz "
        "(pip install 'pagedcheck[campaign]'). Exit 0 nothing found, 1 a failure is stored in DIR, 2 usage error "
        "or HypoFuzz could not run (its log names why).",
    )
    add_family_option(p, "whose machine runs")
    p.add_argument("--impl", metavar="IMPL", help="the implementation, as `fuzz --impl` takes it (default: the "
                   "family's engine)")
    p.add_argument("--db", type=Path, required=True, metavar="DIR",
                   help="the campaign folder: made if new; one folder per implementation")
    p.add_argument("--workers", type=positive, default=1, help="HypoFuzz processes on this machine (default: 1)")
    p.add_argument("--steps", type=positive, default=50, help="calls per program, at most (default: 50)")
    p.add_argument("--seconds", type=seconds, metavar="SECONDS",
                   help="stop after this long (default: run until a failure is found or Ctrl-C)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from oracle.campaign import Campaign, hypofuzz_missing

    family = chosen_family(args)
    impl = args.impl or family.default_impl
    try:
        factory = family.load_adapter(impl)
    except ValueError as exc:
        raise UsageError(f"--impl {impl}: {exc}") from None
    campaign = Campaign(family.name, impl, args.steps)
    if (args.db / "campaign.json").is_file():
        try:
            earlier = Campaign.read(args.db)
        except ValueError as exc:
            raise UsageError(f"--db {exc}") from None
        if earlier != campaign:
            raise UsageError(f"--db {args.db} is the campaign of {earlier.family} {earlier.impl} with --steps "
                             f"{earlier.steps}: give those, or another folder (one per implementation)")
    elif args.db.exists() and (not args.db.is_dir() or any(args.db.iterdir())):
        raise UsageError(f"--db {args.db} exists and is not a campaign folder: give a new or an empty folder")
    missing = hypofuzz_missing()
    if missing:
        raise UsageError(missing)
    return _run_campaign(args, campaign, family, factory)  # pragma: no cover  (needs HypoFuzz)


def _run_campaign(args: argparse.Namespace, campaign: "Campaign", family: Family,
                  factory: AdapterFactory) -> int:  # pragma: no cover
    # (needs HypoFuzz, an optional extra: tests/test_campaign.py runs it where it is installed)
    from oracle.campaign import run as run_hypofuzz, stored_failures
    from oracle.stats import RunStats

    impl = campaign.impl
    folder = args.db.resolve()
    for path in campaign.write(folder):
        print(f"wrote {path}")
    log = folder / "hypofuzz.log"
    machine = family.machine_for(factory, RunStats())
    before = stored_failures(folder, machine, family.name)
    print(f"campaign: HypoFuzz with {args.workers} worker(s) on {family.name} {impl}, "
          + (f"for at most {args.seconds:g} s" if args.seconds else "until a failure is found (Ctrl-C stops it)")
          + f"; its output goes to {log}", flush=True)
    status, ran = run_hypofuzz(folder, args.workers, args.seconds, log)
    found = stored_failures(folder, machine, family.name)
    if found:
        print(f"campaign: {found} failing example(s) stored in {folder / 'examples'} after {ran:.0f} s"
              + (f" ({before} before this run)" if before else ""))
        print(f"Replay and shrink it (on any machine, with the same pagedcheck and Hypothesis): "
              f"pagedcheck fuzz --replay {folder}")
        return EXIT_FAILED
    if status not in (None, 0, 1):
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        print(f"pagedcheck campaign: error: HypoFuzz exited with status {status}: {' | '.join(tail)}", file=sys.stderr)
        return EXIT_USAGE
    print(f"campaign: no failure found in {ran:.0f} s")
    return EXIT_OK
