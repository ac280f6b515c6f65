"""Benchmark: the same fuzz with bubblewrap and in the fallback (a `bwrap` that fails first on PATH, as in a
container that cannot create namespaces), same seed and budget; prints both wall times and their ratio.

    python tests/bench/fallback_speed.py [--impl engine/c/llm_memory.c] [--seed 3] [--examples 30] [--repeat 3]

Each mode runs `pagedcheck fuzz --impl IMPL --seed S --examples N` as a fresh process, `--repeat` times
(alternating, so a load change hits both), each in a fresh working folder (no example database); the best time of each
counts. The isolation each mode ran in is printed from the sandbox itself. Target: ratio <= 1.5.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAILING_BWRAP = "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"


def environment(failing_bin: Path | None) -> dict[str, str]:
    path = os.environ.get("PATH", "/usr/bin:/bin")
    return {**os.environ, "PATH": f"{failing_bin}{os.pathsep}{path}" if failing_bin else path,
            "PYTHONPATH": str(ROOT)}


def isolation(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", "from oracle.sandbox import Sandbox\nwith Sandbox() as box: "
                           "print(box.description)"], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def fuzz_seconds(args: argparse.Namespace, env: dict[str, str], scratch: Path) -> float:
    cwd = Path(tempfile.mkdtemp(dir=scratch))  # a fresh working folder: no Hypothesis database of earlier runs
    cmd = [sys.executable, "-m", "oracle.cli", "fuzz", "--impl", str(args.impl), "--seed", str(args.seed),
           "--examples", str(args.examples)]
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"fuzz failed ({done.returncode}): {done.stdout[-500:]}{done.stderr[-500:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", type=Path, default=ROOT / "engine" / "c" / "llm_memory.c")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--examples", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    args.impl = args.impl.resolve()
    with tempfile.TemporaryDirectory(prefix="pagedcheck-bench-") as scratch:
        Path(scratch).chmod(0o755)  # the failing bwrap runs as each run's uid too, and fails the same way
        failing_bin = Path(scratch) / "bin"
        failing_bin.mkdir()
        (failing_bin / "bwrap").write_text(FAILING_BWRAP)
        (failing_bin / "bwrap").chmod(0o755)
        modes = {"bubblewrap": environment(None), "fallback": environment(failing_bin)}
        for name, env in modes.items():
            print(f"{name:>10}: {isolation(env)}")
        times: dict[str, list[float]] = {name: [] for name in modes}
        for _ in range(args.repeat):
            for name, env in modes.items():
                times[name].append(fuzz_seconds(args, env, Path(scratch)))
    command = f"pagedcheck fuzz --impl {args.impl} --seed {args.seed} --examples {args.examples}"
    print(f"command: {command} (best of {args.repeat})")
    for name, runs in times.items():
        print(f"{name:>10}: {min(runs):6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in runs)})")
    ratio = min(times["fallback"]) / min(times["bubblewrap"])
    print(f"ratio fallback / bubblewrap: {ratio:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
