"""What the user types: argument types that refuse a bad value in one line, the options several commands share,
and the --family they name."""

import argparse
import math
from pathlib import Path

from oracle.commands.status import UsageError
from oracle.family import DEFAULT_FAMILY, Family, families, family_named
from oracle.run_cpu import HUNG_WALL


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def seed_value(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {value}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {value}")
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds, got {text!r}")
    return value


def output_file(text: str) -> Path:
    path = Path(text)
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"directory {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory")
    return path


def add_family_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--family", default=DEFAULT_FAMILY, metavar="NAME",
                   help=f"the allocator family {what}: {', '.join(families())} (default: {DEFAULT_FAMILY})")


def add_rubric_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rubric", type=Path, metavar="FILE", help="a rubric TOML file (default: the family's shipped rubric)")


def add_quiet_option(p: argparse.ArgumentParser, text: str = "no progress lines") -> None:
    p.add_argument("-q", "--quiet", action="store_true", help=text)


def add_limit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--time-limit", type=seconds, default=300.0, metavar="SECONDS",
                   help="the whole grade of one submission may use this many CPU seconds, those of the grader and "
                   "of every run it starts (so a busy machine, which only delays it, does not reach the limit), and "
                   f"at most {HUNG_WALL} times as many seconds of wall clock (a submission that waits without "
                   "computing); items not started by then are not run (default: 300)")
    p.add_argument("--require-sandbox", action="store_true",
                   help="refuse to grade unless submission code runs in the full sandbox (bubblewrap)")


def add_lang_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lang", choices=("c", "python"),
                   help="hw3: the language of a folder's upload: c (the default) grades its llm_memory.c, python its "
                   "llm_memory.py (each at the folder's top, else the only one in its folders; none is the "
                   "submission's failure, graded 0)")


def lang_for(args: argparse.Namespace, family: Family) -> dict[str, str]:
    """The `lang` keyword for the family's grade, when --lang was given (a family that grades several takes it)."""
    if not getattr(args, "lang", None):
        return {}
    if args.lang not in family.languages:
        raise UsageError(f"--lang: the {family.name} family grades one language and takes no --lang")
    return {"lang": args.lang}


def add_site_option(p: argparse.ArgumentParser, where: str) -> None:
    p.add_argument("--site", type=Path, metavar="DIR",
                   help="prefix: a folder of packages the submission needs, made by `pip install --target DIR PACKAGE...` "
                   f"for the system Python (xxhash and numpy for nano-vllm): {where} (oracle/SANDBOX.md)")


def site_for(args: argparse.Namespace, family: Family, rubric: object = None) -> dict[str, Path]:
    """The `site` keyword for the family's grade: --site, else the rubric's `site`, checked (a folder the family's
    child can take); {} when neither names one."""
    from oracle.site import site_folder

    given, where = getattr(args, "site", None), "--site"
    if given is None and getattr(rubric, "site", None) is not None:
        given, where = rubric.site, f"rubric {rubric.source}: site"  # type: ignore[attr-defined]
    if given is None:
        return {}
    if not family.takes_site:
        raise UsageError(f"{where}: the {family.name} family's grader takes no site folder")
    try:
        return {"site": site_folder(given)}
    except ValueError as exc:
        raise UsageError(f"{where} {exc}") from None


def add_grade_options(p: argparse.ArgumentParser) -> None:
    """The options of `grade` and `grade-all` (which passes each on to the `grade` of every submission)."""
    add_family_option(p, "to grade")
    add_rubric_option(p)
    add_lang_option(p)
    add_site_option(p, "mounted read-only in the sandbox and last on the submission's import path")
    p.add_argument("--seed", type=seed_value, help="fuzz seed (default: the rubric's, fixed, so reruns agree)")
    p.add_argument("--timeout", type=seconds, default=2.0, help="seconds one call of a submission may take (default: 2)")
    add_limit_options(p)
    add_quiet_option(p)


def chosen_family(args: argparse.Namespace) -> Family:
    """The registered family --family names."""
    try:
        return family_named(args.family)
    except ValueError as exc:
        raise UsageError(f"--family: {exc}") from None


def grading_family(args: argparse.Namespace) -> Family:
    """The --family to grade with: registered, and with a grader and a rubric."""
    family = chosen_family(args)
    if family.grade is None or family.load_rubric is None:
        raise UsageError(f"--family {family.name}: this family has no grader")
    return family
