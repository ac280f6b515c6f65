"""The standalone C repro: it compiles with the official flags and no warning, replays any program against the
reference as "OK", and for a divergence the real machine finds prints the same message and exits 1."""

import copy
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from oracle.family import families
from oracle.hw3 import load_adapter
from oracle.hw3.c.build import OFFICIAL_FLAGS
from oracle.hw3.call import Call
from oracle.hw3.machine import Divergence, machine_for
from oracle.hw3.model import Model
from oracle.hw3.pool import initial_pool, magic, magic_slot
from oracle.hw3.repro import _max_sequences, _program, _source, build_repro, repro_c
from oracle.hw3.memcheck import battery_programs
from oracle.hw3.programs import battery_program
from oracle.hw3.step import expected_calls
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK
from oracle.runner import fuzz
from oracle.sandbox import shared

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "engine" / "c"


def _random_programs(count: int) -> dict[str, tuple[list[Call], Model]]:
    """Programs the machine generates, each with the model before teardown destroys the engine, so the
    final check sees live sequences, shared blocks and written pools."""
    programs: dict[str, tuple[list[Call], Model]] = {}

    class Recording(machine_for(load_adapter("engine"))):  # type: ignore[misc, valid-type]
        def teardown(self) -> None:
            programs[f"random_{len(programs)}"] = (list(self.driver.calls), copy.deepcopy(self.driver.model))
            super().teardown()

    run_settings = settings(
        max_examples=count, stateful_step_count=25, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    run_state_machine_as_test(seed(7)(Recording), settings=run_settings)
    return programs


def _battery_c(programs: dict[str, tuple[list[Call], Model]]) -> str:
    """One C source holding several programs, each replayed and checked as repro_c's one: `battery NAME` runs
    one (a harness of this test's: one build for many programs)."""
    table = "\n".join(f'    {{"{name}", replay_{name}}},' for name in programs)
    main = f"""static const struct {{
    const char *name;
    void (*replay)(void);
}} programs[] = {{
{table}
}};

int main(int argc, char **argv)
{{
    for (size_t i = 0; argc == 2 && i < sizeof programs / sizeof programs[0]; i++)
        if (strcmp(argv[1], programs[i].name) == 0) {{
            programs[i].replay();
            no_pool();
            puts("OK: no divergence");
            return 0;
        }}
    puts("usage: battery NAME");
    return 2;
}}"""
    parts = [_program(calls, model, name) for name, (calls, model) in programs.items()]
    return _source("/* pagedcheck battery */", parts, _max_sequences(calls for calls, _ in programs.values()), main)


def _run(binary: Path, *args: str) -> tuple[int | None, str]:
    box = shared()
    done = box.run([box.expose(binary), *args], timeout=20, readable=[box.expose(binary).parent], cwd=Path("/tmp"))
    return done.status, done.output.strip()


def test_reference_replays_the_battery_and_random_programs_ok(tmp_path: Path) -> None:
    programs = battery_programs() | _random_programs(12)
    binary, output = build_repro(_battery_c(programs), REFERENCE, tmp_path, name="battery")
    assert binary is not None and output == "", output
    for name in programs:
        assert _run(binary, name) == (0, "OK: no divergence"), name


def test_single_repro_compiles_without_warnings_and_passes_on_the_reference(tmp_path: Path) -> None:
    calls, model = expected_calls(battery_program("null_engine"))
    source = repro_c(calls, model, "none: a battery program")
    # it includes llm_memory.c (its heap counted), so it is built alone beside it
    assert "gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -O2 -ggdb repro.c -o repro && ./repro" in source
    # after llm_destroy the engine is gone: later calls pass NULL, never the freed pointer
    destroy = source.index('check_int(13, "llm_destroy(engine)"')
    assert "engine = NULL;" in source[destroy - 200 : destroy]
    assert "create_sequence(NULL, 0, 1)" in source[destroy:]
    binary, output = build_repro(source, REFERENCE, tmp_path)
    assert binary is not None and output == "", output
    assert _run(binary) == (0, "OK: no divergence")


@pytest.mark.parametrize(
    "name, fuzz_seed",
    [
        ("repro_accepts_zero_length", 0),  # return value
        ("init_writes_pool", 0),  # the pool, byte for byte
        ("repro_fork_at_head", 4),  # the active list's order
        ("repro_cow_keeps_ref", 3),  # a ref_count
    ],
)
def test_repro_of_a_machine_found_divergence_shows_it(
    name: str, fuzz_seed: int, tmp_path: Path, submission: Callable[..., Path]
) -> None:
    path = submission("broken", name)
    factory = load_adapter(str(path))
    for attempt in range(3):  # the seed finds it fast today; as the machine evolves, a neighbour will
        report = fuzz(families()["hw3"], str(path), factory, examples=30, steps=12, seed=fuzz_seed + attempt)
        if report.divergence is not None:
            break
    assert report.divergence is not None and isinstance(report.failure, Divergence)
    failure = report.failure
    binary, output = build_repro(repro_c(failure.calls, failure.model, report.divergence), path, tmp_path)
    assert binary is not None and output == "", output
    status, printed = _run(binary)
    problem, call = report.divergence.rsplit(" after ", 1)
    step = len(failure.calls)
    if problem.startswith("return value:"):
        assert printed == f"step {step}: {call}: {problem}"
    else:
        assert printed == f"after step {step}: {problem}"
    assert status == 1


def test_repro_fill_matches_pool_py_byte_for_byte(tmp_path: Path) -> None:
    """The C harness computes the magic numbers itself (MAGIC from pool.py's constants): for a pool whose
    size is no multiple of 4, its fill must be initial_pool's bytes exactly, the partial last slot too."""
    size = 3 * BLOCK_SIZE + 4 * 997 + 3  # well past 2**31 for many slots' bits, and a 3-byte last slot
    main = f"""int main(void)
{{
    new_pool({size});
    fwrite(pool, 1, {size}, stdout);
    no_pool();
    return 0;
}}"""
    source = _source("/* fill test */", [], 1, main)
    flags = (*OFFICIAL_FLAGS, "-Wno-unused-function")  # the checking half of the harness is not called
    binary, output = build_repro(source, REFERENCE, tmp_path, name="fill", flags=flags)
    assert binary is not None and output == "", output
    done = subprocess.run([binary], capture_output=True, timeout=20, check=True)
    assert done.stdout == initial_pool(size)


def test_magic_numbers_of_neighbouring_slots_differ_in_every_byte() -> None:
    """So a copy that misses any one byte of a block (say copy-on-write copying 63 of 64) leaves a wrong value."""
    slots = 1 << 16
    numbers = [magic(s).to_bytes(4, "little", signed=True) for s in range(slots + 1)]
    assert all(a[i] != b[i] for a, b in zip(numbers, numbers[1:]) for i in range(4))
    assert len(set(numbers)) == len(numbers)
    assert all(magic_slot(magic(s)) == s for s in (0, 1, 15, 16, 255, slots, 2**31, 2**32 - 1))
    # and a block's number in each slot differs from the next block's in every byte too (16 slots apart)
    apart = [magic(s + KV_PER_BLOCK).to_bytes(4, "little", signed=True) for s in range(slots)]
    assert sum(any(a[i] == b[i] for i in range(4)) for a, b in zip(numbers, apart)) == 0
