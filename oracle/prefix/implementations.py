"""How a prefix-family implementation is named and loaded: `engine`, `SHAPE:pkg.module[:attr][@POLICY]` (an API
shape's adapter and the policy to check it under), `vllm:DIR`, or a user's adapter class (see oracle/prefix/__init__.py
and oracle/prefix/README.md)."""

from oracle.family import AdapterFactory
from oracle.prefix.policy import POLICIES, Policy, universal
from oracle.prefix.strategies import Domain

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
