"""Benchmark: the largest live heap (bytes and blocks, by the grader's ledger) each correct C implementation of the
suites reaches in each item of the default rubric, natively (valgrind's runs have no ledger), and how many requests
the ledger found past the fence's limits (its budget or block count). What the fence's limits (driver_process.py's
Ledger, driver.c's fence_reserve) must leave a wide margin over.

    python tests/bench/heap_peak.py [NAME ...]

NAME: reference, or a fixture below (all by default). Prints figures; asserts nothing.
"""

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from oracle.hw3.c import ledger as ledger_module  # noqa: E402
from oracle.hw3.grade import grade, load  # noqa: E402
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched  # noqa: E402

CORRECT = {  # correct implementations written in unusual ways, patches on the reference (the tamper suites')
    "realloc_recursive": SUBMISSIONS / "correct_review2" / "realloc_recursive.patch",
    "small_records": SUBMISSIONS / "correct_review2" / "small_records.patch",
    "spare_records": SUBMISSIONS / "correct_review2" / "spare_records.patch",
    "usable_size": SUBMISSIONS / "hostile" / "review5" / "usable_size.patch",
    "many_scratch_allocations": SUBMISSIONS / "hostile" / "review6" / "many_scratch_allocations.patch",
}


class Peak:
    """The largest live heap any ledger reached since the last reset, and the requests answered past its limits."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.bytes = self.blocks = self.refused = 0

    def watch(self) -> None:
        grant, peak = ledger_module.Ledger._grant, self

        def watched(ledger: ledger_module.Ledger, first: int, end: int) -> int:
            injected = ledger.injected or ledger.fail_at == 1
            answer = grant(ledger, first, end)
            if answer not in (ledger_module.CONTINUE, ledger_module.errno.EEXIST) and not injected:
                peak.refused += 1
            peak.bytes = max(peak.bytes, ledger.live_pages * ledger_module.PAGE)
            peak.blocks = max(peak.blocks, len(ledger.live))
            return answer

        ledger_module.Ledger._grant = watched  # type: ignore[method-assign]


def measure(name: str, source: str, peak: Peak) -> None:
    rows: list[tuple[str, str, int, int, int]] = []

    def on_item(item) -> None:  # type: ignore[no-untyped-def]
        rows.append((item.id, item.status, peak.bytes, peak.blocks, peak.refused))
        peak.reset()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "submission"
        folder.mkdir()
        (folder / "llm_memory.c").write_text(source)
        peak.reset()
        grade(str(folder), load(), Path(tmp) / "out", on_item=on_item)
    for item, status, size, blocks, refused in rows:
        print(f"{name:26} {item:22} {status:10} {size / (1 << 20):9.2f} MiB {blocks:7} blocks {refused:4} past limits")
    top = max(rows, key=lambda row: row[2])
    most = max(rows, key=lambda row: row[3])
    print(f"{name:26} most bytes {top[2] / (1 << 20):.2f} MiB ({top[0]}), most blocks {most[3]} ({most[0]})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=["reference", *CORRECT])
    args = parser.parse_args()
    peak = Peak()
    peak.watch()
    for name in args.names:
        source = REFERENCE_C.read_text() if name == "reference" else patched(REFERENCE_C.read_text(), CORRECT[name])
        measure(name, source, peak)


if __name__ == "__main__":
    main()
