"""Benchmark: what HW3's driver itself costs a fuzz step (every call made, every check on), without Hypothesis.

    python tests/bench/hw3_driver_cost.py [--examples N] [--steps N] [--seed N] [--repeat N]

The steps of the checked hw3 run of fuzz_speed.py (same examples, steps and seed, on the Python engine) are
recorded once as Hypothesis draws them, then replayed `--repeat` times straight on a new Driver per program.
Printed: CPU microseconds per step of each replay and their minimum. fuzz_speed.py's ratio moves by 10% or more
with the machine's load; this figure is the part of a step our code owns, steadier, so a change to the driver,
model, adapter or engine can be measured (run it before and after, back to back).
"""

import argparse
import time

from fuzz_speed import steps_per_second  # (tests/bench/ is this script's folder)

from oracle.family import family_named
from oracle.hw3 import machine
from oracle.hw3.driver import Divergence, Driver
from oracle.stats import RunStats


def recorded_programs(examples: int, steps: int, run_seed: int) -> list[list]:
    """Each program of the checked run as its operations, each (act, arguments) as the machine called it."""
    programs: dict[int, tuple[Driver, list]] = {}  # id(driver) -> the driver (kept, so no other has its id), its steps
    for operation in [machine.START, *machine.OPERATIONS.values()]:
        act = operation.act

        def recording(driver: Driver, _act=act, **arguments):  # type: ignore[no-untyped-def]
            programs.setdefault(id(driver), (driver, []))[1].append((_act, arguments))
            return _act(driver, **arguments)

        object.__setattr__(operation, "act", recording)  # the machine's rules read `act` at each step
    family, stats = family_named("hw3"), RunStats()
    steps_per_second(family.machine_for(family.load_adapter("engine"), stats), stats, examples, steps, run_seed)
    return [made for _, made in programs.values()]


def replay(programs: list[list]) -> float:
    """CPU seconds to make every program's operations on a new Driver each (a program that diverges ends there)."""
    adapter = family_named("hw3").load_adapter("engine")
    start = time.process_time()
    for program in programs:
        driver = Driver(adapter(), RunStats())
        try:
            for act, arguments in program:
                act(driver, **arguments)
            driver.end()
        except Divergence:
            pass
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    programs = recorded_programs(args.examples, args.steps, args.seed)
    steps = sum(map(len, programs))
    costs = [replay(programs) / steps * 1e6 for _ in range(args.repeat)]
    print(f"hw3 driver: {len(programs)} programs, {steps} steps, seed {args.seed}, replayed {args.repeat} times")
    print("  CPU us/step: " + ", ".join(f"{cost:.1f}" for cost in costs) + f"; min {min(costs):.1f}")


if __name__ == "__main__":
    main()
