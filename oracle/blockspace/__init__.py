"""The blockspace family: the PagedAttention paper's block manager (seed 002) as vLLM v0 exposed it
(BlockSpaceManager: can_allocate, allocate, append_slots with copy-on-write, fork, free, swapping between a GPU
and a CPU pool). README.md next to this file describes it. An implementation is `engine` (ours,
engine/blockspace), or `pkg.module[:Class]` or `path/file.py[:Class]` naming a block manager class (default
Class: BlockSpaceManager)."""

from oracle.blockspace import picture
from oracle.blockspace.adapter import Adapter
from oracle.blockspace.grade import GRADER
from oracle.blockspace.machine import machine_for
from oracle.blockspace.model import POLICIES, Policy
from oracle.family import AdapterFactory, Family, MutationTarget
from oracle.stats import RunStats
from oracle.table_machine import repro_preamble
from oracle.target import load_target

CALLS = ("can_allocate", "allocate", "can_append_slots", "append_slots", "fork", "free", "can_swap_out", "swap_out",
         "can_swap_in", "swap_in", "get_block_table", "get_num_free_gpu_blocks", "get_num_free_cpu_blocks")


def load_adapter(impl: str) -> AdapterFactory:
    """An adapter factory for the block manager class `impl` names; ValueError with a one-line reason."""
    policy = Policy()
    if impl.startswith("vllm:"):
        from oracle.blockspace import vllm

        folder, _, name = impl.removeprefix("vllm:").partition("@")
        cls, policy = vllm.load(folder), POLICIES.get(name or "vllm_v0")
        if policy is None:
            raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")
    else:
        module, _, attr = GRADER.resolve(impl).partition(":")
        cls = load_target(f"{module}:{attr or 'BlockSpaceManager'}")
    missing = [call for call in CALLS if not callable(getattr(cls, call, None))]
    if not isinstance(cls, type) or missing:
        raise ValueError(f"{impl} is not a block manager class" + (f" (no {', '.join(missing)})" if missing else ""))
    factory = lambda: Adapter(cls)  # noqa: E731
    factory.policy = policy  # type: ignore[attr-defined]  (what the machine checks it under)
    return factory


def describe_run(stats: RunStats) -> str:
    """The paper's measure: the share of allocated GPU slots that hold no token, over every checked state."""
    slots, filled = stats.events["gpu_slots_allocated"], stats.events["gpu_slots_filled"]
    return f"memory waste: {1 - filled / slots:.1%} of {slots} allocated GPU slots held no token" if slots else ""


# `pagedcheck mutation --family blockspace`: mutmut over engine/blockspace, killed by the engine's machine and
# the scenario programs (oracle/blockspace/README.md has the score and the triage)
MUTATION = MutationTarget("engine/blockspace/", "mutation/blockspace_equivalent.toml", {
    "source_paths": ["engine/blockspace/"], "also_copy": ["oracle/", "mutation/"],
    "pytest_add_cli_args_test_selection": ["tests/test_blockspace_engine.py", "tests/test_blockspace_programs.py"],
    "pytest_add_cli_args": ["-p", "no:cacheprovider", "-x", "-q"]})

FAMILY = Family(
    name="blockspace",
    summary="the PagedAttention paper's block manager (vLLM v0): block tables, sharing, copy-on-write, swapping",
    machine_for=machine_for,
    load_adapter=load_adapter,
    repro_preamble=repro_preamble("oracle.blockspace", "BlockspaceMachine"),
    load_rubric=GRADER.load,
    grade=GRADER.grade,
    default_rubric=GRADER.default_rubric,
    describe_run=describe_run,
    mutation=MUTATION,
    fixed_constants=True,  # one seed, one run wherever it starts (oracle/determinism.py)
    state_tables=picture.state_tables,
)
