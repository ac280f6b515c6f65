"""Benchmark: the alloc_failure item alone (every allocation of every call failed in turn, one replay each), on the
reference and on the reference with N scratch buffers made and freed, all checked, in each create_sequence
(tests/submissions/hostile/review5/sample_skipped.patch with no unchecked one): its status, tries and seconds.

    python tests/bench/alloc_failure_speed.py [--scratch N ...]

A create of the program makes N + 3 or N + 4 allocations; past alloc_failure.MOST_PER_CALL the item is not run.
Prints figures; asserts nothing.
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from oracle.hw3.grade import grade, load  # noqa: E402
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched  # noqa: E402
from tests.test_grade import small_rubric  # noqa: E402

SCRATCH = SUBMISSIONS / "hostile" / "review5" / "sample_skipped.patch"


def with_scratch(count: int) -> str:
    """The reference, each create_sequence making and freeing `count` scratch buffers, every NULL checked."""
    source = patched(REFERENCE_C.read_text(), SCRATCH)
    return source.replace("i <= 64;", f"i <= {count};").replace("i != 10)", "i != 0)")


def alloc_failure(source: str) -> tuple[str, float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "submission"
        folder.mkdir()
        (folder / "llm_memory.c").write_text(source)
        report = grade(str(folder), load(small_rubric(Path(tmp) / "rubric.toml", ["alloc_failure"])), Path(tmp) / "out")
    item = next(item for item in report.items if item.id == "alloc_failure")
    return item.status, item.seconds, item.message


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=int, nargs="*", default=[64])
    args = parser.parse_args()
    for name, source in [("reference", REFERENCE_C.read_text()),
                         *((f"{n} scratch buffers a create", with_scratch(n)) for n in args.scratch)]:
        status, seconds, message = alloc_failure(source)
        tries = re.match(r"(\d+) allocations failed one at a time", message)
        per_try = f", {1000 * seconds / int(tries[1]):.1f} ms a try" if tries else ""
        print(f"{name}: {status}, {tries[1] + ' tries' if tries else message}, {seconds:.2f} s{per_try}")


if __name__ == "__main__":
    main()
