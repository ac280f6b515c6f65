"""Which tests add nothing to coverage: from a run measured with a context per test, the tests whose every measured
arc another test measures too, taken greedily from the slowest (unmeasuring one changes what the others must
keep). Such a test still runs and asserts in CI; marked `unmeasured` (tests/conftest.py), --cov leaves it out.
Prints each as a line of tests/unmeasured.txt (its node id, then its seconds as a comment); on stderr, for the slow
tests that do add coverage, how many arcs each alone measures.

    python -m pytest -n 2 --cov --cov-context=test          # writes .coverage with a context per test
    python tests/bench/unmeasured.py .coverage DURATIONS.tsv [--min-seconds 5] > tests/unmeasured.txt

DURATIONS.tsv: one line per test phase, `seconds<TAB>when<TAB>outcome<TAB>nodeid` (a conftest hook's
pytest_runtest_logreport, README "Development"). Arcs measured in child processes carry no test's context: they
count as kept by an unknown test, so a test whose only coverage is its children's is never listed (and marking
one unmeasured stops its children's measure too)."""

import argparse
import sqlite3
import sys
from collections import Counter, defaultdict

UNKNOWN = "<a child process>"


def seconds_per_test(path: str) -> Counter:
    spent: Counter = Counter()
    with open(path) as lines:
        for line in lines:
            took, _, outcome, node = line.rstrip("\n").split("\t")
            if outcome != "skipped":
                spent[node] += float(took)
    return spent


def arcs_per_test(path: str) -> dict[str, set[tuple[int, int, int]]]:
    """Each test's measured arcs (file, from, to), its setup, call and teardown together."""
    db = sqlite3.connect(path)
    names = dict(db.execute("select id, context from context"))
    per: dict[str, set] = defaultdict(set)
    for file, context, start, end in db.execute("select file_id, context_id, fromno, tono from arc"):
        name = names[context]
        per[name.rsplit("|", 1)[0] if "|" in name else UNKNOWN].add((file, start, end))
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("coverage_file")
    parser.add_argument("durations")
    parser.add_argument("--min-seconds", type=float, default=5.0)
    args = parser.parse_args()
    spent, per = seconds_per_test(args.durations), arcs_per_test(args.coverage_file)
    holders = Counter(arc for arcs in per.values() for arc in arcs)
    slow = sorted((t for t in per if t != UNKNOWN and spent[t] >= args.min_seconds), key=lambda t: -spent[t])
    chosen = []
    for test in slow:
        if all(holders[arc] > 1 for arc in per[test]):
            holders.subtract(per[test])
            chosen.append(test)
            print(f"{test}  # {spent[test]:.1f} s measured")
    print(f"# {len(chosen)} tests add no coverage: {sum(spent[t] for t in chosen):.0f} s measured", file=sys.stderr)
    for test in slow:
        if test not in chosen:
            alone = sum(1 for arc in per[test] if holders[arc] == 1)
            print(f"#   adds {alone:5d} arcs: {spent[test]:7.1f} s  {test}", file=sys.stderr)


if __name__ == "__main__":
    main()
