"""`pagedcheck gradescope-bundle` and `gradescope-run`: a Gradescope autograder zip, and a local run of one."""

import argparse
from pathlib import Path

from oracle.commands.options import (
    add_family_option, add_lang_option, add_limit_options, add_rubric_option, grading_family, lang_for, output_file,
)
from oracle.commands.status import EXIT_OK, EXIT_USAGE, UsageError
from oracle.family import DEFAULT_FAMILY


def register(sub: argparse._SubParsersAction) -> None:
    bundle_p = sub.add_parser(
        "gradescope-bundle",
        help="build a Gradescope autograder zip that installs and runs this pagedcheck",
        description="Write a Gradescope autograder zip: setup.sh (apt packages, then pagedcheck from the zip, "
        "pinned), run_autograder (grades /autograder/submission into /autograder/results/results.json, always "
        "written), this checkout as a wheel, pinned requirements and the rubric. Needs a source checkout. Prints "
        "the rubric's items and total points, the Gradescope visibility its [gradescope] table sets, and the "
        "isolation the bundle's reports will state.",
    )
    bundle_p.add_argument("bundle", type=output_file, metavar="OUT.zip", help="the zip to write")
    add_rubric_option(bundle_p)
    add_family_option(bundle_p, "to grade")
    add_lang_option(bundle_p)
    add_limit_options(bundle_p)
    bundle_p.set_defaults(run=run_bundle)

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
    run_p.set_defaults(run=run_autograder)


def run_bundle(args: argparse.Namespace) -> int:
    from oracle.grading.bundle import BundleError, write_bundle
    from oracle.grading.rubric import RubricError

    family = grading_family(args)
    try:
        rubric = family.load_rubric(args.rubric)  # a bad rubric never makes a bundle
        if rubric.site is not None:
            raise UsageError(f"rubric {rubric.source}: site: a Gradescope bundle carries no site folder yet (grade "
                             "with `grade --site` or `grade-all`, or leave site out)")
        options = ["--time-limit", str(args.time_limit)] + (["--require-sandbox"] if args.require_sandbox else [])
        options += ["--family", family.name] if family.name != DEFAULT_FAMILY else []
        options += ["--lang", lang_for(args, family)["lang"]] if args.lang else []
        names = write_bundle(args.bundle, Path(rubric.source), options)
    except (RubricError, BundleError) as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {args.bundle}: {', '.join(names)}")
    print(f"rubric {rubric.source}: {rubric.title or 'untitled'}, {len(rubric.items)} items, "
          f"{rubric.max_score:g} points in all" + _visibility(rubric)
          + ("; for Python the items that apply only to C are not counted" if args.lang == "python" else ""))
    print(f"isolation: {bundle_isolation(args.require_sandbox)}")
    return EXIT_OK


def _visibility(rubric) -> str:  # type: ignore[no-untyped-def]
    hidden = [item.id for item in rubric.items if item.visibility != "visible"]
    parts = [f"results visibility {rubric.visibility}"] if rubric.visibility else []
    parts += [f"{len(hidden)} item(s) not visible at once ({', '.join(hidden)})"] if hidden else []
    return f"; {'; '.join(parts)}" if parts else ""


def bundle_isolation(required: bool) -> str:
    """What each report of the bundle will say of its isolation (Gradescope runs run_autograder as root)."""
    full = "bubblewrap (no network, own pid namespace, only its own files visible), each run as an unprivileged uid"
    if required:
        return f"{full}; with --require-sandbox a container where bubblewrap cannot run grades nothing (each " \
               "results.json says why)"
    return f"{full}, where bubblewrap runs in Gradescope's container (setup.sh installs it); else landlock where the " \
           "kernel has it (only /usr and its own files reachable, each run as an unprivileged uid), else uid (each " \
           "run as an unprivileged uid, the file system not hidden). Each report.json's isolation says which " \
           "(--require-sandbox refuses the fallback)"


def run_autograder(args: argparse.Namespace) -> int:
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
