"""`pagedcheck grade`: one submission against a rubric, with the report files a course platform reads."""

import argparse
import errno
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from oracle.commands.options import add_grade_options, grading_family, lang_for, output_file, site_for
from oracle.commands.outputs import write_file, write_html, write_json
from oracle.commands.status import UsageError
from oracle.family import draws_page
from oracle.grading.report import GradeReport
from oracle.page import PAGE_NAME, grade_items


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "grade",
        help="grade one submission against a rubric",
        description="Grade a submission of the family (hw3, the default: a C submission, llm_memory.c or a "
        "directory holding one, or a Python module pkg.module[:attr]; prefix: SHAPE:pkg.module[@POLICY], a .py "
        "file or a folder): every rubric item, with the rule, step, expected and actual value of each failure "
        "(and, for hw3, a standalone repro C file). A submission's own mistakes (no llm_memory.c in a folder, a "
        "main() of its own, a compile error or warning) are graded: every item it stops scores 0, with why. "
        "Exit 0 all items pass, 1 some item fails, 2 the grader cannot run (a path that does not exist, a bad "
        "rubric, no gcc).",
    )
    p.add_argument("submission", metavar="SUBMISSION",
                   help="hw3: llm_memory.c, a directory holding it (with --lang python: llm_memory.py), a .py file "
                   "or pkg.module; prefix: see --family")
    p.add_argument("--json", type=output_file, metavar="FILE", help="write the report as JSON (pagedcheck-grade/1)")
    p.add_argument("--gradescope", type=output_file, metavar="FILE", help="write Gradescope's results.json")
    p.add_argument("--junit", type=output_file, metavar="FILE", help="write the report as JUnit XML (for CI)")
    p.add_argument("--prairielearn", type=output_file, metavar="FILE",
                   help="write PrairieLearn's external grader results.json")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help=f"where repro files and {PAGE_NAME} (the failing steps, pictured) go (default: beside the "
                   "first report file asked for; with none, they are not kept). Every file written is named on stdout")
    add_grade_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from oracle.grading.grader import GraderError
    from oracle.grading.rubric import RubricError
    from oracle.grading.table import render
    from oracle.run_cpu import Budget

    family = grading_family(args)
    budget = Budget(args.time_limit)  # CPU seconds of this grade's process tree from now (and a wall-clock cap)

    def on_item(item) -> None:
        if not args.quiet:
            print(f"grade: {item.id}: {item.status.replace('_', ' ')} ({item.seconds:.1f} s)", file=sys.stderr)

    keep = artifacts_dir(args)
    with budget, _folder(keep) as out_dir:
        try:
            rubric = family.load_rubric(args.rubric)
            site = site_for(args, family, rubric)  # --site, else the rubric's
            report = family.grade(args.submission, rubric, out_dir, seed=args.seed, timeout=args.timeout,
                                  on_item=on_item, budget=budget, require_sandbox=args.require_sandbox,
                                  **lang_for(args, family), **site)
        except (RubricError, GraderError) as exc:
            failure = GradeReport(family.name, args.submission, "unknown", "", str(args.rubric or family.default_rubric),
                                  args.seed or 0, grader_error=str(exc))
            write_reports(args, failure)
            raise UsageError(str(exc)) from None
        except OSError as exc:  # the grader's own disk (copying the submission into the sandbox): no traceback
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            said = f"the grader could not prepare the run: {os.strerror(exc.errno)}"
            try:
                write_reports(args, GradeReport(family.name, args.submission, "unknown", "", str(args.rubric or
                                                family.default_rubric), args.seed or 0, grader_error=said))
            except OSError:
                pass  # the disk is full: the one line below is what there is
            raise UsageError(said) from None
        print(render(report))
        if keep is None:
            if any(item.repro for item in report.items) or report.evidence:
                print(f"\nRepro files and {PAGE_NAME} (the failing steps, pictured) were not kept: add --out DIR")
        else:
            if any(item.repro for item in report.items):
                print(f"\nRepro files are in {out_dir}")
            if draws_page(family):
                write_html(family, out_dir / PAGE_NAME, f"{args.submission}: {report.score:g}/{report.max_score:g}",
                           grade_items(report))
    write_reports(args, report, rubric.visibility)
    return report.exit_status


def artifacts_dir(args: argparse.Namespace) -> Path | None:
    """Where repro files and the HTML page go: --out, else beside a report file; None: nowhere asked, so
    they are made in a temporary folder that is removed when the grade ends."""
    if args.out:
        return args.out
    for path in (args.json, args.gradescope, args.junit, args.prairielearn):
        if path:
            return path.parent
    return None


@contextmanager
def _folder(keep: Path | None) -> Iterator[Path]:
    """`keep`, or a temporary folder removed on the way out."""
    if keep is not None:
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="pagedcheck-grade-out-") as scratch:
        yield Path(scratch)


def write_reports(args: argparse.Namespace, report: GradeReport, visibility: str | None = None) -> None:
    """Every report file asked for: --json, --gradescope, --junit, --prairielearn. `visibility`: Gradescope's
    top-level one, from the rubric's [gradescope] table (None: left to Gradescope)."""
    from oracle.grading import gradescope, junit, prairielearn

    if args.json:
        write_json(args.json, report.as_dict())
    scope = gradescope.failure_results(report.grader_error) if report.grader_error and not report.items \
        else gradescope.results(report)
    if visibility is not None:
        scope = {**scope, "visibility": visibility}
    writers = [
        (args.gradescope, lambda path: gradescope.write(path, scope)),
        (args.junit, lambda path: junit.write(path, report)),
        (args.prairielearn, lambda path: prairielearn.write(path, report)),
    ]
    for path, write in writers:
        if path is not None:
            write_file(path, write)
