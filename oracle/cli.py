"""The `pagedcheck` command: a thin layer over the library; every subcommand is a function tests call.

Exit status: 0 all green; 1 a divergence or a failed check (the implementation's fault); 2 a usage error
or a grader that cannot run (ours or the caller's).
"""

import argparse
import json
import math
import os
import random
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import NoReturn, Sequence

from oracle.family import DEFAULT_FAMILY, Family, families, family_named
from oracle.grading.report import GradeReport
from oracle.page import PAGE_NAME, FailedItem, fuzz_items, grade_items, write_page
from oracle.runner import Progress, fuzz

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
GRADE_ALL_MARGIN = 60.0  # seconds past --time-limit before grade-all kills a grade (it still writes its report)


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (no usage block) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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
    if args.html and family.render_html is None:
        raise UsageError(f"--html: the {family.name} family draws no HTML page")
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
        + (f"; shrinking: {stats.shrink_replays} replays" if stats.shrink_replays else "")
    )
    if report.passed:
        print("OK: the implementation agreed with the model after every step")
    else:
        print("\nMinimal failing program (run it with python):\n")
        print("\n".join(report.program))
        print(f"\nFirst divergence: {report.divergence}")
        if report.cut_short:
            print(f"Shrinking stopped at its budget ({stats.shrink_replays} replays): the program may not be minimal")
        print(f"Rerun: pagedcheck fuzz --family {family.name} --impl {impl} --examples {args.examples} --steps {args.steps} --seed {seed}")
    if args.json:
        write_json(args.json, report.as_dict())
    if args.html:
        _page(family, args.html, f"pagedcheck fuzz {impl} (seed {seed})", fuzz_items(report))
    return EXIT_OK if report.passed else EXIT_FAILED


def _page(family: Family, path: Path, title: str, items: list[FailedItem]) -> None:
    """Writes the family's HTML page of the failing steps (oracle/page.py)."""
    try:
        write_page(family, path, title, items)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _artifacts_dir(args: argparse.Namespace, name: str) -> Path:
    """Where repro files go: --out, else beside a report file, else a new temporary directory."""
    import tempfile

    if args.out:
        return args.out
    for path in (args.json, args.gradescope, args.junit, args.prairielearn):
        if path:
            return path.parent
    return Path(tempfile.mkdtemp(prefix=f"pagedcheck-{Path(name).stem or 'grade'}-"))


def _write_reports(args: argparse.Namespace, report: GradeReport) -> None:
    """Every report file asked for: --json, --gradescope, --junit, --prairielearn."""
    from oracle.grading import gradescope, junit, prairielearn

    if args.json:
        write_json(args.json, report.as_dict())
    scope = gradescope.failure_results(report.grader_error) if report.grader_error and not report.items \
        else gradescope.results(report)
    writers = [
        (args.gradescope, lambda path: gradescope.write(path, scope)),
        (args.junit, lambda path: junit.write(path, report)),
        (args.prairielearn, lambda path: prairielearn.write(path, report)),
    ]
    for path, write in writers:
        if path is None:
            continue
        try:
            write(path)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _grading_family(args: argparse.Namespace) -> Family:
    """The --family to grade with: registered, and with a grader and a rubric."""
    try:
        family = family_named(args.family)
    except ValueError as exc:
        raise UsageError(f"--family: {exc}") from None
    if family.grade is None or family.load_rubric is None:
        raise UsageError(f"--family {family.name}: this family has no grader")
    return family


def cmd_grade(args: argparse.Namespace) -> int:
    from oracle.grading.grader import GraderError
    from oracle.grading.rubric import RubricError
    from oracle.grading.table import render

    family = _grading_family(args)
    deadline = time.monotonic() + args.time_limit

    def on_item(item) -> None:
        if not args.quiet:
            print(f"grade: {item.id}: {item.status.replace('_', ' ')} ({item.seconds:.1f} s)", file=sys.stderr)

    out_dir = _artifacts_dir(args, args.submission)
    try:
        rubric = family.load_rubric(args.rubric)
        report = family.grade(args.submission, rubric, out_dir, seed=args.seed, timeout=args.timeout, on_item=on_item,
                           deadline=deadline, require_sandbox=args.require_sandbox)
    except (RubricError, GraderError) as exc:
        failure = GradeReport(family.name, args.submission, "unknown", "", str(args.rubric or family.default_rubric),
                              args.seed or 0, grader_error=str(exc))
        _write_reports(args, failure)
        raise UsageError(str(exc)) from None
    print(render(report))
    if any(item.repro for item in report.items):
        print(f"\nRepro files are in {out_dir}")
    if family.render_html is not None:
        _page(family, out_dir / PAGE_NAME, f"{args.submission}: {report.score:g}/{report.max_score:g}", grade_items(report))
        if report.exit_status:
            print(f"The failing steps, pictured: {out_dir / PAGE_NAME}")
    _write_reports(args, report)
    return report.exit_status


def cmd_grade_all(args: argparse.Namespace) -> int:
    from oracle.grading.batch import exit_status, find_submissions, grade_all
    from oracle.grading.rubric import RubricError

    family = _grading_family(args)
    if not args.directory.is_dir():
        raise UsageError(f"{args.directory} is not a directory")
    try:
        rubric = family.load_rubric(args.rubric)  # a bad rubric stops the batch before it starts
    except RubricError as exc:
        raise UsageError(str(exc)) from None
    submissions, skipped = find_submissions(args.directory)
    if not submissions and not skipped:
        raise UsageError(f"{args.directory} holds no submission folders")
    out = args.out or args.directory.with_name(args.directory.name + "-grades")
    if out.resolve().is_relative_to(args.directory.resolve()):
        raise UsageError(f"--out {out} would mix reports with submissions")

    def command(submission: Path, sub_out: Path) -> list[str]:
        cmd = [sys.executable, "-m", "oracle.cli", "grade", str(submission), "--out", str(sub_out),
               "--json", str(sub_out / "report.json"), "--gradescope", str(sub_out / "results.json"),
               "--timeout", str(args.timeout), "--time-limit", str(args.time_limit), "--family", family.name, "-q"]
        if args.require_sandbox:
            cmd.append("--require-sandbox")
        if args.rubric:
            cmd += ["--rubric", str(args.rubric)]
        if args.seed is not None:
            cmd += ["--seed", str(args.seed)]
        return cmd

    root = str(Path(__file__).resolve().parents[1])  # so the child imports this very pagedcheck
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    rows = grade_all(submissions, out.resolve(), command, [item.id for item in rubric.items], jobs=args.jobs,
                     timeout=args.time_limit + GRADE_ALL_MARGIN, env=env, progress=None if args.quiet else sys.stderr,
                     skipped=skipped)
    graded = sum(row.status not in ("grader error", "skipped") for row in rows)
    print(f"graded {graded} of {len(rows)} submissions; scores in {out / 'scores.csv'}, one report per folder")
    return exit_status(rows)


def cmd_gradescope_bundle(args: argparse.Namespace) -> int:
    from oracle.grading.bundle import BundleError, write_bundle
    from oracle.grading.rubric import RubricError

    family = _grading_family(args)
    try:
        rubric = family.load_rubric(args.rubric)  # a bad rubric never makes a bundle
        options = ["--time-limit", str(args.time_limit)] + (["--require-sandbox"] if args.require_sandbox else [])
        options += ["--family", family.name] if family.name != DEFAULT_FAMILY else []
        names = write_bundle(args.bundle, Path(rubric.source), options)
    except (RubricError, BundleError) as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {args.bundle}: {', '.join(names)}")
    return EXIT_OK


def cmd_gradescope_run(args: argparse.Namespace) -> int:
    import tempfile

    from oracle.grading.autograder import AutograderError, run

    if not args.bundle.is_file():
        raise UsageError(f"{args.bundle}: no such file")
    if not args.submission.is_dir() or args.submission.is_symlink():
        raise UsageError(f"{args.submission} is not a folder")
    root = args.root or Path(tempfile.mkdtemp(prefix="pagedcheck-autograder-"))
    try:
        done = run(args.bundle, args.submission, root.resolve())
    except (AutograderError, OSError) as exc:
        raise UsageError(str(exc)) from None
    if done.results is None:
        print(f"run_autograder (exit {done.status}) wrote no valid {done.results_file}; see {root / 'run_autograder.log'}")
        return EXIT_USAGE
    tests = done.results.get("tests", [])
    print(f"{done.results_file}: score {done.results['score']:g} of {sum(t.get('max_score', 0) for t in tests):g} "
          f"({len(tests)} tests; set-up {'ran' if done.set_up else 'reused'}; logs in {root})")
    return EXIT_OK


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {value}")
    return value


def cmd_mutation_c(args: argparse.Namespace) -> int:
    """Grader strength on C: mutants of a model solution, each graded by the real grader (mutation/README.md)."""
    from mutation import c_campaign

    source = Path(args.c)
    if not source.is_file():
        raise UsageError(f"--c {args.c}: no such file")
    progress = None if args.quiet else (lambda line: print(f"mutation: {line}", file=sys.stderr))
    try:
        result = c_campaign.run_campaign(source, jobs=args.jobs, progress=progress)
    except c_campaign.CampaignError as exc:
        raise UsageError(str(exc)) from None
    print(c_campaign.render(result, args.threshold))
    if args.json:
        write_json(args.json, result.as_dict(args.threshold))
    return EXIT_OK if result.passed(args.threshold) else EXIT_FAILED


def cmd_mutation(args: argparse.Namespace) -> int:
    """A clean mutmut campaign over the Python engine (mutation/README.md), or with --c the C campaign."""
    import importlib.util

    if args.c is not None:
        return cmd_mutation_c(args)

    from mutation import python as campaign

    try:
        family = family_named(args.family)
    except ValueError as exc:
        raise UsageError(f"--family: {exc}") from None
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
    print(campaign.render(result, args.threshold))
    if args.json:
        write_json(args.json, result.as_dict(args.threshold))
    return EXIT_OK if result.passed(args.threshold) else EXIT_FAILED


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {value}")
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds, got {text!r}")
    return value


def _add_limit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--time-limit", type=_timeout, default=300.0, metavar="SECONDS",
                   help="seconds for the whole grade of one submission; items not started by then are not run "
                   "(default: 300)")
    p.add_argument("--require-sandbox", action="store_true",
                   help="refuse to grade unless submission code runs in the full sandbox (bubblewrap)")


def _add_family_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--family", default=DEFAULT_FAMILY, metavar="NAME",
                   help=f"the allocator family {what}: {', '.join(families())} (default: {DEFAULT_FAMILY})")


def _add_grade_options(p: argparse.ArgumentParser) -> None:
    _add_family_option(p, "to grade")
    p.add_argument("--rubric", type=Path, metavar="FILE", help="a rubric TOML file (default: the family's shipped rubric)")
    p.add_argument("--seed", type=_seed, help="fuzz seed (default: the rubric's, fixed, so reruns agree)")
    p.add_argument("--timeout", type=_timeout, default=2.0, help="seconds one call of a submission may take (default: 2)")
    _add_limit_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pagedcheck",
        description="Model-based stateful testing for paged KV-cache memory managers.",
        epilog="Exit status: 0 green, 1 the implementation failed, 2 usage error or the grader could not run.",
    )
    parser.add_argument("--version", action="version", version=f"pagedcheck {version('pagedcheck')}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    fuzz_p = sub.add_parser(
        "fuzz",
        help="fuzz an implementation against the model",
        description="Drive an implementation and the model with the same random programs; stop at the first "
        "disagreement and print the smallest program that shows it.",
    )
    fuzz_p.add_argument("--family", choices=sorted(families()), default=DEFAULT_FAMILY,
                        help=f"allocator family (default: {DEFAULT_FAMILY})")
    fuzz_p.add_argument(
        "--impl",
        metavar="IMPL",
        help="`engine` (the family's built-in engine, the default); hw3: a C file or a Python module "
        "`pkg.module[:attr]`; prefix: `SHAPE:pkg.module[:attr][@POLICY]`",
    )
    fuzz_p.add_argument("--examples", type=_positive, default=200, help="programs to run (default: 200)")
    fuzz_p.add_argument("--steps", type=_positive, default=50, help="calls per program, at most (default: 50)")
    fuzz_p.add_argument("--seed", type=_seed, help="random seed; the same seed gives the same run (default: random)")
    fuzz_p.add_argument("--json", type=_output_file, metavar="FILE", help="write statistics and any failure as JSON")
    fuzz_p.add_argument("--html", type=_output_file, metavar="FILE",
                        help="write one self-contained HTML page picturing the divergence (expected beside actual)")
    fuzz_p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    fuzz_p.set_defaults(run=cmd_fuzz)

    grade_p = sub.add_parser(
        "grade",
        help="grade one submission against a rubric",
        description="Grade a submission of the family (hw3, the default: a C submission, llm_memory.c or a "
        "directory holding one, or a Python module pkg.module[:attr]; prefix: SHAPE:pkg.module[@POLICY], a .py "
        "file or a folder): every rubric item, with the rule, step, expected and actual value of each failure "
        "(and, for hw3, a standalone repro C file). Exit 0 all items pass, 1 some item fails, 2 the grader cannot run.",
    )
    grade_p.add_argument("submission", metavar="SUBMISSION",
                         help="hw3: llm_memory.c, a directory holding it, or pkg.module; prefix: see --family")
    grade_p.add_argument("--json", type=_output_file, metavar="FILE", help="write the report as JSON (pagedcheck-grade/1)")
    grade_p.add_argument("--gradescope", type=_output_file, metavar="FILE", help="write Gradescope's results.json")
    grade_p.add_argument("--junit", type=_output_file, metavar="FILE", help="write the report as JUnit XML (for CI)")
    grade_p.add_argument("--prairielearn", type=_output_file, metavar="FILE",
                         help="write PrairieLearn's external grader results.json")
    grade_p.add_argument("--out", type=Path, metavar="DIR",
                         help=f"where repro files and {PAGE_NAME} (the failing steps, pictured) go (default: beside --json)")
    _add_grade_options(grade_p)
    grade_p.set_defaults(run=cmd_grade)

    all_p = sub.add_parser(
        "grade-all",
        help="grade every submission folder in a directory",
        description="Grade each folder of DIR as a submission, JOBS at a time; write OUT/scores.csv and, per "
        "folder, report.json, results.json and repro files. One broken submission never stops the batch.",
    )
    all_p.add_argument("directory", type=Path, metavar="DIR", help="a directory of submission folders")
    all_p.add_argument("--out", type=Path, metavar="OUT", help="where reports go (default: DIR-grades beside DIR)")
    all_p.add_argument("--jobs", type=_positive, default=1, help="submissions graded at once (default: 1)")
    _add_grade_options(all_p)
    all_p.set_defaults(run=cmd_grade_all)
    bundle_p = sub.add_parser(
        "gradescope-bundle",
        help="build a Gradescope autograder zip that installs and runs this pagedcheck",
        description="Write a Gradescope autograder zip: setup.sh (apt packages, then pagedcheck from the zip, "
        "pinned), run_autograder (grades /autograder/submission into /autograder/results/results.json, always "
        "written), this checkout as a wheel, pinned requirements and the rubric. Needs a source checkout.",
    )
    bundle_p.add_argument("bundle", type=_output_file, metavar="OUT.zip", help="the zip to write")
    bundle_p.add_argument("--rubric", type=Path, metavar="FILE", help="a rubric TOML file (default: the family's shipped rubric)")
    _add_family_option(bundle_p, "to grade")
    _add_limit_options(bundle_p)
    bundle_p.set_defaults(run=cmd_gradescope_bundle)

    run_p = sub.add_parser(
        "gradescope-run",
        help="run a Gradescope bundle on a submission in a simulated /autograder tree",
        description="Lay out Gradescope's /autograder tree under ROOT (source/, submission/, results/), run "
        "the bundle's setup.sh there (without apt-get) and its run_autograder on SUBMISSION_DIR; print "
        "results.json's score. Exit 0 a valid results.json was written, 2 otherwise.",
    )
    run_p.add_argument("bundle", type=Path, metavar="OUT.zip", help="a zip from gradescope-bundle")
    run_p.add_argument("submission", type=Path, metavar="SUBMISSION_DIR", help="the folder a student uploads")
    run_p.add_argument("--root", type=Path, metavar="DIR", help="the tree's root: new or set up for this bundle "
                       "before (default: a new temporary folder)")
    run_p.set_defaults(run=cmd_gradescope_run)

    mut_p = sub.add_parser(
        "mutation",
        help="measure test strength: the mutation score of our suite on the Python engine (mutmut)",
        description="Run a clean mutmut campaign over the Python engine from a pagedcheck checkout (fresh "
        "mutants/), with the suite's mutation test selection; print a summary with every untriaged survivor's "
        "diff. Exit 0 score >= threshold and no mutant without tests, 1 otherwise, 2 usage error.",
    )
    _add_family_option(mut_p, "whose engine to mutate")
    mut_p.add_argument("--jobs", type=_positive, default=2, help="mutants tested at once (mutmut --max-children; default: 2)")
    mut_p.add_argument("--threshold", type=_fraction, default=0.95, help="lowest passing score (default: 0.95)")
    mut_p.add_argument("--json", type=_output_file, metavar="FILE", help="write the counts, score and survivors as JSON")
    mut_p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    mut_p.add_argument(
        "--c", nargs="?", const=str(Path(__file__).resolve().parents[1] / "engine" / "c" / "llm_memory.c"),
        metavar="PATH", help="instead: grader strength on C. Mutate a model solution (default: the C reference), "
        "grade every compiling mutant with the real grader, report killed / survived / equivalent",
    )
    mut_p.set_defaults(run=cmd_mutation)
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
