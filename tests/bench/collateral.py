"""Collateral: grade every C fixture in tests/submissions/broken/ with the default rubric (`pagedcheck grade
<dir> --json r.json`) and count the items each fails beyond its own (its rule's items, plus fuzz, plus
memory_safety for a memory error). Prints one line per fixture, then the totals.

    python tests/bench/collateral.py [--jobs N] [fixture ...]
"""

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched  # noqa: E402
from tests.fixture_items import OWN_ITEMS  # noqa: E402


def grade(name: str, work: Path) -> tuple[str, dict]:
    directory = work / name
    directory.mkdir()
    (directory / "llm_memory.c").write_text(patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / f"{name}.patch"))
    report = work / f"{name}.json"
    subprocess.run([sys.executable, "-m", "oracle.cli", "grade", str(directory), "--json", str(report), "-q",
                    "--out", str(work / f"{name}-out")], capture_output=True, cwd=ROOT)
    return name, json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    names = args.names or sorted(p.stem for p in (SUBMISSIONS / "broken").glob("*.patch"))
    total_items = total_points = 0
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        for name, report in pool.map(lambda n: grade(n, Path(tmp)), names):
            failed = {i["id"]: i for i in report["items"] if i["status"] != "passed" and i["max_points"] > 0}
            own = OWN_ITEMS.get(name, set())
            extra = sorted(set(failed) - own - {"fuzz"})
            points = sum(failed[i]["max_points"] for i in extra)
            total_items, total_points = total_items + len(extra), total_points + points
            print(f"{name:28} score {report['score']:>5} own {sorted(own)} collateral {extra} ({points} points)")
    print(f"TOTAL over {len(names)} fixtures: {total_items} collateral items, {total_points} points")


if __name__ == "__main__":
    main()
