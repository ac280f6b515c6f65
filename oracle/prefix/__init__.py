"""The prefix-caching family: block pools with a chained-hash prefix cache (the mini_vllm lab, vLLM v1 itself,
seed 003's minivllm BlockManager, nano-vllm, Mini-YAIE, and a user's own pool through the adapter contract).

An implementation is named `SHAPE:pkg.module[:attr][@POLICY]`: the API shape (an adapter), the module or
object of that shape, and optionally the policy to check it under (default: the shape's own system; `any`:
the universal invariants only). `engine` is our engine, `lab:engine.prefix`; `vllm:DIR` is vLLM's own
KV-cache manager from an unzipped wheel (oracle/prefix/vllm_loader.py); `path/to/adapter.py:Class` is a
user's adapter class (oracle/prefix/adapters/contract.py, oracle/prefix/README.md).
"""

from pathlib import Path

from oracle.family import Family, MutationTarget
from oracle.prefix import difference  # noqa: F401  (words the family's aspects)
from oracle.prefix.calls import failure_in_calls
from oracle.prefix.machine import machine_for
from oracle.prefix.implementations import BUILTIN_ENGINE, load_adapter, policy_for, shapes  # noqa: F401 (the family's names)
from oracle.prefix.picture import state_tables
from oracle.table_machine import repro_preamble

def load_rubric(path: Path | None = None):  # type: ignore[no-untyped-def]
    """The prefix rubric at `path`, or the shipped one (oracle/prefix/rubric.toml); raises RubricError."""
    from oracle.prefix.grade import load

    return load(path)


def grade_submission(*args, **kwargs):  # type: ignore[no-untyped-def]
    from oracle.prefix.grade import grade as run

    return run(*args, **kwargs)


# `pagedcheck mutation --family prefix`: mutmut over engine/prefix, killed by the prefix tests (mutation/prefix.md)
MUTATION = MutationTarget("engine/prefix/", "mutation/prefix_equivalent.toml", {
    "source_paths": ["engine/prefix/"],
    "also_copy": ["oracle/", "mutation/"],
    "pytest_add_cli_args_test_selection": ["tests/test_prefix_engine.py", "tests/test_prefix_machine.py"],
    "pytest_add_cli_args": ["-p", "no:cacheprovider", "-x", "-q", "-k", "not reaches_every_boundary"],
})

FAMILY = Family(
    name="prefix",
    summary="prefix-caching block pools: chained block hashes, ref counts, warm free blocks, eviction order",
    machine_for=machine_for,
    load_adapter=load_adapter,
    repro_preamble=repro_preamble("oracle.prefix", "PrefixMachine"),
    default_impl="engine",
    load_rubric=load_rubric,
    grade=grade_submission,
    default_rubric=Path(__file__).with_name("rubric.toml"),
    mutation=MUTATION,
    fixed_constants=True,
    state_tables=state_tables,
    takes_site=True,
    describe_failure=failure_in_calls,
)
