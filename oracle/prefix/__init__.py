"""The prefix-caching family: block pools with a chained-hash prefix cache (the mini_vllm lab, vLLM v1 itself,
seed 003's minivllm BlockManager, nano-vllm, Mini-YAIE, and a user's own pool through the adapter contract).

An implementation is named `SHAPE:pkg.module[:attr][@POLICY]`: the API shape (an adapter), the module or
object of that shape, and optionally the policy to check it under (default: the shape's own system; `any`:
the universal invariants only). `engine` is our engine, `lab:engine.prefix`; `vllm:DIR` is vLLM's own
KV-cache manager from an unzipped wheel (oracle/prefix/vllm_loader.py); `path/to/adapter.py:Class` is a
user's adapter class (oracle/prefix/adapters/contract.py, oracle/prefix/README.md).
"""

from pathlib import Path

from oracle.family import AdapterFactory, Family, MutationTarget
from oracle.prefix import difference  # noqa: F401  (words the family's aspects)
from oracle.prefix.calls import failure_in_calls
from oracle.prefix.machine import machine_for
from oracle.prefix.picture import state_tables
from oracle.prefix.policy import POLICIES, Policy, universal
from oracle.prefix.strategies import Domain
from oracle.table_machine import repro_preamble

BUILTIN_ENGINE = "lab:engine.prefix"


def shapes() -> dict:
    from oracle.prefix.adapters.lab import LabAdapter
    from oracle.prefix.adapters.minivllm import MinivllmAdapter
    from oracle.prefix.adapters.nanovllm import NanovllmAdapter
    from oracle.prefix.adapters.vllm import VllmAdapter
    from oracle.prefix.adapters.yaie import YaieAdapter

    return {a.shape: a for a in (LabAdapter, MinivllmAdapter, NanovllmAdapter, VllmAdapter, YaieAdapter)}


def policy_for(adapter: type, name: str, target: object = None) -> Policy:
    """The policy `name` (empty: the shape's own, for this target; `any`: its universal invariants only);
    ValueError."""
    own = adapter.default_policy_for(target) if hasattr(adapter, "default_policy_for") else adapter.default_policy
    if name == "any":
        return universal(own)
    if name and name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}, any")
    return POLICIES[name] if name else own


def load_adapter(impl: str) -> AdapterFactory:
    """An adapter factory for `engine`, `SHAPE:pkg.module[:attr][@POLICY]`, `vllm:DIR[@POLICY]` or a user's adapter
    class `path/to/adapter.py:Class[@POLICY]` (oracle/prefix/adapters/contract.py); ValueError with a one-line reason."""
    from oracle.prefix.adapters import load_target
    from oracle.prefix.adapters.contract import contract_adapter

    if impl == "engine":
        impl = BUILTIN_ENGINE
    spec, _, policy_name = impl.partition("@")
    shape, sep, target_spec = spec.partition(":")
    known = shapes()
    if sep and shape in known:
        adapter = known[shape]
        target = adapter.load_target(target_spec) if hasattr(adapter, "load_target") else load_target(target_spec)
    elif sep and target_spec and ("." in shape or "/" in shape):  # a user's adapter class
        target_spec = spec
        target = load_target(spec)
        adapter = contract_adapter(target, spec)
    else:
        raise ValueError(f"expected SHAPE:pkg.module[:attr][@POLICY] with SHAPE one of {', '.join(sorted(known))}, "
                         "or path/to/adapter.py:AdapterClass[@POLICY] (the adapter contract: oracle/prefix/README.md)")
    policy = policy_for(adapter, policy_name, target)
    adapter(target, target_spec, policy)  # validate now, so a bad --impl fails before any run

    def factory() -> object:
        return adapter(target, target_spec, policy)

    factory.domain = Domain.of(adapter)  # type: ignore[attr-defined]  (the pools the machine makes)
    return factory


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
