"""Collateral: grade every C fixture in tests/submissions/broken/ with the default rubric (`pagedcheck grade
<dir> --json r.json`) and count the items each fails beyond its own (its rule's items, plus fuzz, plus
memory_safety for a memory error). Prints one line per fixture, then the totals.

    python tests/bench/collateral.py [--jobs N] [fixture ...]
    python tests/bench/collateral.py --dir tests/submissions/unseen [--jobs N]

With --dir, the patches of that folder are graded instead, each owned by the item its comment names
("Owner: `item`", or "Owner: correct" for a correct one, which must score 100). memory_safety is then
listed apart (it is the patch's own item when the bug is a memory error, which the comment may not say), and
a bug its owner missed (the owner passed) is counted as a miss.
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched  # noqa: E402
from tests.fixtures import HW3_C_FAILS as OWN_ITEMS  # noqa: E402


def grade(name: str, work: Path, folder: Path = SUBMISSIONS / "broken") -> tuple[str, dict]:
    directory = work / name
    directory.mkdir()
    (directory / "llm_memory.c").write_text(patched(REFERENCE_C.read_text(), folder / f"{name}.patch"))
    report = work / f"{name}.json"
    subprocess.run([sys.executable, "-m", "oracle.cli", "grade", str(directory), "--json", str(report), "-q",
                    "--out", str(work / f"{name}-out")], capture_output=True, cwd=ROOT)
    return name, json.loads(report.read_text())


def owner_of(patch: Path) -> str:
    """The item a --dir patch's comment names ("Owner: `item`"), or "correct"."""
    match = re.search(r"Owner: `?([a-z0-9_]+)`?", patch.read_text())
    if match is None:
        raise SystemExit(f"{patch}: no `Owner: item` in its comment")
    return match.group(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--dir", type=Path, help="grade the patches of this folder, owned as their comments say")
    args = parser.parse_args()
    folder = args.dir.resolve() if args.dir else SUBMISSIONS / "broken"
    names = args.names or sorted(p.stem for p in folder.glob("*.patch"))
    owners = {name: owner_of(folder / f"{name}.patch") for name in names} if args.dir else {}
    total_items = total_points = 0
    misses, wrong_correct = [], []
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        for name, report in pool.map(lambda n: grade(n, Path(tmp), folder), names):
            failed = {i["id"]: i for i in report["items"] if i["status"] != "passed" and i["max_points"] > 0}
            caught = {i["id"] for i in report["items"] if i["status"] == "failed"}  # alloc_failure has 0 points
            if args.dir:
                owner = owners[name]
                own = set() if owner == "correct" else {owner}
                if owner == "correct" and report["score"] != report["max_score"]:
                    wrong_correct.append(name)
                if owner != "correct" and owner not in caught:
                    misses.append(name)
                apart = " memory_safety failed" if "memory_safety" in failed and owner != "memory_safety" else ""
                extra = sorted(set(failed) - own - {"fuzz", "memory_safety"})
            else:
                own, apart = OWN_ITEMS.get(name, set()), ""
                extra = sorted(set(failed) - own - {"fuzz"})
            points = sum(failed[i]["max_points"] for i in extra)
            total_items, total_points = total_items + len(extra), total_points + points
            print(f"{name:28} score {report['score']:>5} own {sorted(own)} collateral {extra} ({points} points){apart}")
    print(f"TOTAL over {len(names)} fixtures: {total_items} collateral items, {total_points} points")
    if args.dir:
        print(f"missed by their owner: {len(misses)} {misses}; correct ones below 100: {wrong_correct}")


if __name__ == "__main__":
    main()
