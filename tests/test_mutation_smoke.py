"""Mutation smoke: a handful of chosen engine mutants, each of which the real state machine must kill.

The full campaigns (`pagedcheck mutation`, mutation/README.md) take minutes; this runs in CI on every push.
Each mutant is one edit of engine/llm_memory.py of the kinds mutmut makes (an operator, a constant, a
deleted statement), applied to a copy of the source loaded as a fresh module; the engine on disk and in
sys.modules is never touched. The machine runs with a fixed seed and a small budget, without shrinking (a
kill needs one failing program, not the smallest). The unmutated copy must pass the same run, so a kill is
the mutant's doing, not the loading's. If the engine changes so that a mutant's line is gone, the test fails
and asks for a new mutant rather than quietly testing nothing.
"""

import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from oracle.hw3.adapters import PythonAdapter
from oracle.hw3.machine import machine_for

ENGINE = Path(__file__).resolve().parents[1] / "engine" / "llm_memory.py"
SMOKE = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    database=None,
    derandomize=False,
    phases=[Phase.explicit, Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
)

# name -> (the line as the engine has it, the mutant's line); each pair changes one behaviour
MUTANTS = {
    "ceil_division_off_by_two": (
        "required = (initial_kv_len + KV_PER_BLOCK - 1) // KV_PER_BLOCK",
        "required = (initial_kv_len + KV_PER_BLOCK + 1) // KV_PER_BLOCK",
    ),
    "release_frees_at_one": (
        "        if self.ref_count[block] == 0:\n            self.free_local_blocks += 1",
        "        if self.ref_count[block] == 1:\n            self.free_local_blocks += 1",
    ),
    "fork_sets_instead_of_increments": (
        "engine.ref_count[block] += 1",
        "engine.ref_count[block] = 1",
    ),
    "cow_only_above_two_sharers": (
        "shared = block != UNMAPPED and engine.ref_count[block] > 1",
        "shared = block != UNMAPPED and engine.ref_count[block] > 2",
    ),
    "free_does_not_unlink": (
        "    seq.node.unlink()\n    _release_blocks(engine, seq)\n    return 0",
        "    _release_blocks(engine, seq)\n    return 0",
    ),
    "cap_one_record_late": (
        "if logical_idx >= MAX_LOGICAL_BLOCKS:",
        "if logical_idx > MAX_LOGICAL_BLOCKS:",
    ),
    "append_writes_one_slot_late": (
        "block * BLOCK_SIZE + offset * KV_SIZE, kv_data)",
        "block * BLOCK_SIZE + (offset + 1) * KV_SIZE, kv_data)",
    ),
}


def load_engine(name: str, edit: tuple[str, str] | None) -> types.ModuleType:
    source = ENGINE.read_text()
    if edit:
        original, mutated = edit
        assert source.count(original) == 1, f"mutant {name}: its line is no longer in {ENGINE.name}; pick another"
        source = source.replace(original, mutated)
    module = types.ModuleType(f"smoke_{name}")
    exec(compile(source, f"<engine mutant {name}>", "exec"), module.__dict__)
    return module


def run_machine(module: types.ModuleType) -> None:
    machine = machine_for(lambda: PythonAdapter(module, module.__name__))
    run_state_machine_as_test(seed(0)(machine), settings=SMOKE)


def test_unmutated_copy_passes_the_smoke_run():
    run_machine(load_engine("original", None))


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_machine_kills_the_mutant(name):
    module = load_engine(name, MUTANTS[name])
    with pytest.raises(AssertionError) as killed:  # Divergence is an AssertionError
        run_machine(module)
    assert type(killed.value).__name__ == "Divergence", killed.value
