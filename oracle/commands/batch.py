"""`pagedcheck grade-all`: every submission folder of a directory, each graded by its own `pagedcheck grade`."""

import argparse
import os
import shutil
import sys
from pathlib import Path

from oracle.commands.options import add_grade_options, grading_family, lang_for, positive, site_for
from oracle.commands.status import UsageError
from oracle.run_cpu import HUNG_WALL

# seconds past a grade's wall-clock cap (HUNG_WALL times --time-limit, which counts CPU seconds: oracle/run_cpu.py)
# before grade-all kills it; by then the grade has ended its last call and written its report
GRADE_ALL_MARGIN = 60.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "grade-all",
        help="grade every submission folder in a directory",
        description="Grade each folder of DIR as a submission, JOBS at a time; write OUT/scores.csv and, per "
        "folder, report.json, results.json and repro files. One broken submission never stops the batch; a "
        "submission's own mistakes (no llm_memory.c, a main() of its own) are an ordinary row scoring 0. "
        "--only NAME... regrades some folders into an earlier OUT and keeps the rest. Exit 0 every submission "
        "passed, 1 some failed an item, 2 some could not be graded (or a usage error).",
    )
    p.add_argument("directory", type=Path, metavar="DIR", help="a directory of submission folders")
    p.add_argument("--out", type=Path, metavar="OUT", help="where reports go (default: DIR-grades beside DIR)")
    p.add_argument("--jobs", type=positive, default=1, help="submissions graded at once (default: 1)")
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="regrade only these submission folders of DIR into an OUT an earlier grade-all wrote: "
                   "their folders are replaced, every other row is kept as its report.json says, and scores.csv "
                   "is rewritten whole; the exit status is that of the regraded ones")
    add_grade_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from oracle.grading.batch import earlier_rows, exit_status, find_submissions, folder_names, grade_all
    from oracle.grading.rubric import RubricError

    family = grading_family(args)
    lang_for(args, family)  # a --lang the family does not take stops the batch before it starts
    if not args.directory.is_dir():
        raise UsageError(f"{args.directory} is not a directory")
    try:
        rubric = family.load_rubric(args.rubric)  # a bad rubric stops the batch before it starts
    except RubricError as exc:
        raise UsageError(str(exc)) from None
    site = site_for(args, family, rubric).get("site")  # so does a site folder the sandbox cannot be given
    submissions, skipped = find_submissions(args.directory)
    if not submissions and not skipped:
        raise UsageError(f"{args.directory} holds no submission folders")
    out = args.out or args.directory.with_name(args.directory.name + "-grades")
    if out.resolve().is_relative_to(args.directory.resolve()):
        raise UsageError(f"--out {out} would mix reports with submissions")

    kept: list = []
    if args.only:
        names = {sub.name for sub in submissions}
        unknown = [name for name in args.only if name not in names]
        if unknown:
            raise UsageError(f"--only: no submission folder {', '.join(map(repr, unknown))} in {args.directory}")
        if not (out / "scores.csv").is_file():
            raise UsageError(f"--only: {out} holds no scores.csv of an earlier grade-all (give its --out)")
        chosen = set(args.only)
        folders = folder_names([sub.name for sub in submissions])
        kept = earlier_rows(out, [sub.name for sub in submissions if sub.name not in chosen], folders) + skipped
        submissions, skipped = [sub for sub in submissions if sub.name in chosen], []
        for sub in submissions:  # each regraded folder starts empty: nothing of the earlier grade stays
            earlier = out / folders[sub.name]
            if earlier.is_dir() and not earlier.is_symlink():
                shutil.rmtree(earlier)

    def command(submission: Path, sub_out: Path) -> list[str]:
        cmd = [sys.executable, "-m", "oracle.cli", "grade", str(submission), "--out", str(sub_out),
               "--json", str(sub_out / "report.json"), "--gradescope", str(sub_out / "results.json"),
               "--timeout", str(args.timeout), "--time-limit", str(args.time_limit), "--family", family.name, "-q"]
        if args.require_sandbox:
            cmd.append("--require-sandbox")
        if args.lang:
            cmd += ["--lang", args.lang]
        if args.rubric:
            cmd += ["--rubric", str(args.rubric)]
        if args.seed is not None:
            cmd += ["--seed", str(args.seed)]
        if site is not None:
            cmd += ["--site", str(site)]
        return cmd

    root = str(Path(__file__).resolve().parents[2])  # holds oracle/: the child imports this very pagedcheck
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    rows = grade_all(submissions, out.resolve(), command, [item.id for item in rubric.items], jobs=args.jobs,
                     timeout=HUNG_WALL * args.time_limit + GRADE_ALL_MARGIN, env=env,
                     progress=None if args.quiet else sys.stderr, skipped=skipped, kept=kept)
    graded = sum(row.status not in ("grader error", "skipped") for row in rows)
    kept_note = f", {len(kept)} other rows kept" if args.only else ""
    print(f"graded {graded} of {len(rows)} submissions{kept_note}; scores in {out / 'scores.csv'}, one report per folder")
    return exit_status(rows)
