"""Benchmark: fuzz steps per second with every check on, against a no-op machine with the same rules.

    python tests/bench/fuzz_speed.py [--examples N] [--steps N] [--seed N] [--impl IMPL] [--family hw3|prefix]

The no-op machine is the HW3 machine with its calls, model and checks replaced by nothing, so the ratio is
what the implementation, the model and the comparison cost on top of Hypothesis itself. Target: >= 0.5.
"""

import argparse
import time

from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from oracle.hw3 import load_adapter
from oracle.hw3.machine import HW3Machine, machine_for
from oracle.hw3.model import Outcome
from oracle.stats import RunStats


class _NoAdapter:
    def close(self) -> None:
        pass


class NoOpMachine(HW3Machine):
    """Same rules and strategies; every call accepted, nothing called, nothing checked."""

    def _call(self, api, *args, null=False, check=True):
        return Outcome(True)

    def _check(self, shown, failed):
        pass


def steps_per_second(machine: type, stats: RunStats, examples: int, steps: int, run_seed: int) -> float:
    run_settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                            suppress_health_check=list(HealthCheck))
    start = time.perf_counter()
    run_state_machine_as_test(seed(run_seed)(machine), settings=run_settings)
    return stats.steps / (time.perf_counter() - start)


def compare_with_noop(label: str, adapter_factory, examples: int, steps: int, run_seed: int, target: float,
                      family: str = "hw3") -> None:
    """Print steps/s of a no-op machine and of the real one on `adapter_factory`, same seed, and their ratio."""
    noop_stats, real_stats = RunStats(), RunStats()
    if family == "prefix":  # its no-op keeps the model (the rules build prompts from it): see prefix_noop
        from oracle.prefix.machine import machine_for as prefix_machine_for
        from prefix_noop import noop_machine  # beside this script, on sys.path when it runs

        noop, real = noop_machine(noop_stats), prefix_machine_for(adapter_factory, real_stats)
    else:
        noop = type("NoOpMachine", (NoOpMachine,), {"adapter_factory": staticmethod(_NoAdapter), "stats": noop_stats})
        real = machine_for(adapter_factory, real_stats)
    noop_rate = steps_per_second(noop, noop_stats, examples, steps, run_seed)
    real_rate = steps_per_second(real, real_stats, examples, steps, run_seed)
    print(f"no-op machine: {noop_rate:8.0f} steps/s ({noop_stats.steps} steps)")
    print(f"{label:>13}: {real_rate:8.0f} steps/s ({real_stats.steps} steps, every check on)")
    print(f"ratio: {real_rate / noop_rate:.2f} (target >= {target})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--impl", default="engine")
    parser.add_argument("--family", choices=["hw3", "prefix"], default="hw3")
    args = parser.parse_args()
    from oracle.family import families

    factory = families()[args.family].load_adapter(args.impl)
    compare_with_noop(args.impl, factory, args.examples, args.steps, args.seed, target=0.5, family=args.family)


if __name__ == "__main__":
    main()
