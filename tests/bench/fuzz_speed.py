"""Benchmark: fuzz steps per second with every check on, against a bare no-op Hypothesis machine, in one run.

    python tests/bench/fuzz_speed.py [--examples N] [--steps N] [--seed N] [--family hw3 prefix] [--impl IMPL] [--repeat N]

For each family (default: hw3 and prefix, each on its Python engine, in this process), the same examples and
steps are run by a bare RuleBasedStateMachine (one rule that does nothing: what Hypothesis itself costs a step),
by the family's machine with nothing called, observed or compared (its rules and strategies: what Hypothesis
costs to draw that family's programs), and by the family's machine against the implementation, every check on.
Printed: steps per CPU second of each (the CPU time of this process, where all run, so the figure holds on a
machine shared with other work) and the ratio of the checked machine's rate to each. Target (issue 19): >= 0.5.
`--family blockspace` measures that family's machine too (against the bare machine only: it has no
nothing-called figure).
"""

import argparse
import statistics
import time
from typing import Callable

from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from oracle.stats import RunStats

Clock = Callable[[], float]


def bare_machine(stats: RunStats) -> type:
    class BareMachine(RuleBasedStateMachine):
        @rule()
        def step(self) -> None:
            stats.steps += 1

    return BareMachine


class _NoAdapter:
    """An implementation that is not there: what the nothing-called machines hold."""

    policy = None
    supports = frozenset({"lookup", "append", "commit", "fork", "reset"})

    def admit(self, rid, tokens):  # type: ignore[no-untyped-def]
        return True, None

    def append(self, rid, token):  # type: ignore[no-untyped-def]
        return True

    def lookup(self, tokens):  # type: ignore[no-untyped-def]
        return []

    def reset(self) -> bool:
        return True

    def close(self) -> None:
        pass

    start = commit = fork = free = lambda self, *args: None


def unchecked_machine(family: str, stats: RunStats) -> type:
    """The family's machine, its rules and strategies, with nothing called, observed or compared."""
    if family == "hw3":
        from oracle.hw3.machine import Driver, machine_of
        from oracle.hw3.model import Outcome

        class Unchecked(Driver):
            def make(self, api, *args, null=False, check=True):  # type: ignore[no-untyped-def]
                return Outcome(True)

            def check(self, shown, failed):  # type: ignore[no-untyped-def]
                pass

            def _appends(self, seq_id, kv_data, count):  # type: ignore[no-untyped-def]
                return count, False  # an append burst's calls, made without make
    else:
        from prefix_noop import noop_machine  # (tests/bench/ is this script's folder)

        return noop_machine(stats)
    return machine_of(Unchecked)(_NoAdapter, stats)


def steps_per_second(machine: type, stats: RunStats, examples: int, steps: int, run_seed: int,
                     clock: Clock = time.perf_counter) -> float:
    """Steps per second of `clock` of `machine` over `examples` programs of up to `steps` steps."""
    run_settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                            suppress_health_check=list(HealthCheck))
    start = clock()
    run_state_machine_as_test(seed(run_seed)(machine), settings=run_settings)
    return stats.steps / (clock() - start)


def compare_with_bare(label: str, machine: type, stats: RunStats, examples: int, steps: int, run_seed: int,
                      clock: Clock = time.process_time, target: float = 0.5, ratios: list | None = None) -> float:
    """Prints the steps per second (of `clock`) of a bare no-op machine and of `machine`, and their ratio (also
    appended to `ratios`); returns the rate of `machine`."""
    unit = "CPU-s" if clock is time.process_time else "s"
    bare_stats = RunStats()
    bare = steps_per_second(bare_machine(bare_stats), bare_stats, examples, steps, run_seed, clock)
    real = steps_per_second(machine, stats, examples, steps, run_seed, clock)
    print(f"{label}: {examples} examples of up to {steps} steps, seed {run_seed}")
    print(f"  bare no-op machine: {bare:8.0f} steps/{unit} ({bare_stats.steps} steps)")
    print(f"  every check on:     {real:8.0f} steps/{unit} ({stats.steps} steps)")
    print(f"  ratio: {real / bare:.2f} (target >= {target})")
    if ratios is not None:
        ratios.append(real / bare)
    return real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--family", nargs="*", default=["hw3", "prefix"])
    parser.add_argument("--impl", default="engine")
    parser.add_argument("--repeat", type=int, default=1,
                        help="measure each family this many times and print the ratios' median (a shared machine's "
                        "load moves one measure by 10%% or more)")
    args = parser.parse_args()
    for name in args.family:
        ratios: list[float] = []
        for _ in range(args.repeat):
            measure(name, args, ratios)
        if args.repeat > 1:
            print(f"{name}: ratio over {args.repeat} measures: median {statistics.median(ratios):.2f}, "
                  f"min {min(ratios):.2f}, max {max(ratios):.2f}")


def measure(name: str, args: argparse.Namespace, ratios: list[float]) -> None:
    """One measure of the family `name`: its checked machine against the bare one, and its nothing-called one."""
    from oracle.family import family_named

    family, stats = family_named(name), RunStats()
    machine = family.machine_for(family.load_adapter(args.impl), stats)
    checked = compare_with_bare(f"{name} ({args.impl})", machine, stats, args.examples, args.steps, args.seed,
                                ratios=ratios)
    if name in ("hw3", "prefix"):
        unchecked_stats = RunStats()
        unchecked = steps_per_second(unchecked_machine(name, unchecked_stats), unchecked_stats, args.examples,
                                     args.steps, args.seed, time.process_time)
        print(f"  its rules, nothing called: {unchecked:8.0f} steps/CPU-s ({unchecked_stats.steps} steps); "
              f"every check on / this: {checked / unchecked:.2f}")


if __name__ == "__main__":
    main()
