"""Every C fixture's verdict, recorded to compare two versions of the grader side by side: grades each patch of
tests/submissions/{broken,unseen,stacked,hostile}/ with the default rubric and a small fuzz budget (as the
fixture tests do) and writes {kind/name: {"score": s, "items": {id: [status, points, message]}}} as JSON.

    python tests/bench/verdicts.py OUT.json [--jobs N] [--kinds broken unseen ...] [--items compiles alloc_failure ...]
    python tests/bench/verdicts.py --compare BEFORE.json AFTER.json

--compare prints every item whose status, points or message differs, and exits 1 if any does.
"""

import argparse
import json
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched  # noqa: E402

KINDS = ("broken", "unseen", "stacked", "hostile")


def verdict(kind: str, name: str, items: list[str] | None = None) -> tuple[str, dict]:
    from oracle.hw3.grade import grade, load
    from tests.test_grade import small_rubric

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        directory = work / name
        directory.mkdir()
        (directory / "llm_memory.c").write_text(patched(REFERENCE_C.read_text(), SUBMISSIONS / kind / f"{name}.patch"))
        out = work / "out"
        out.mkdir()
        report = grade(str(directory), load(small_rubric(work / "rubric.toml", items)), out, timeout=1.0)
        items = {item.id: [item.status, item.points, item.message] for item in report.items}
        return f"{kind}/{name}", {"score": report.score, "items": items}


def compare(before: dict, after: dict) -> int:
    changed = 0
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old is None or new is None:
            print(f"{key}: only in {'after' if old is None else 'before'}")
            changed += 1
            continue
        for item in sorted(set(old["items"]) | set(new["items"])):
            a, b = old["items"].get(item), new["items"].get(item)
            if a != b:
                changed += 1
                print(f"{key} {item}:\n  before {a}\n  after  {b}")
        if old["score"] != new["score"]:
            print(f"{key}: score {old['score']} -> {new['score']}")
    print(f"{changed} item(s) differ over {len(set(before) | set(after))} fixtures")
    return 1 if changed else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--kinds", nargs="*", default=list(KINDS))
    parser.add_argument("--items", nargs="*", help="grade only these rubric items (default: all)")
    parser.add_argument("--compare", nargs=2, type=Path)
    args = parser.parse_args()
    if args.compare:
        raise SystemExit(compare(*(json.loads(p.read_text()) for p in args.compare)))
    if args.out is None:
        parser.error("give OUT.json or --compare BEFORE AFTER")
    work = [(kind, p.stem) for kind in args.kinds for p in sorted((SUBMISSIONS / kind).glob("*.patch"))]
    with ProcessPoolExecutor(args.jobs) as pool:
        results = dict(pool.map(verdict, *zip(*work), [args.items] * len(work)))
    args.out.write_text(json.dumps(results, indent=1, sort_keys=True))
    print(f"{len(results)} fixtures graded, wrote {args.out}")


if __name__ == "__main__":
    main()
