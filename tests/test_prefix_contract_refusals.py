"""The adapter contract's refusals (oracle/prefix/adapters/contract.py): each way a user's class breaks the
contract is a one-line reason naming the class and what is wrong, before anything runs."""

import pytest

from oracle.prefix.adapters.contract import contract_adapter, declared_policy


class Good:
    supports = {"lookup"}

    def __init__(self, num_blocks: int, block_size: int): ...
    def admit(self, rid, tokens): return True
    def free(self, rid): ...
    def observe(self): return {"tables": {}}
    def lookup(self, tokens): return []


def test_a_class_that_keeps_the_contract_becomes_an_adapter_under_the_universal_invariants():
    adapter = contract_adapter(Good, "good.py:Good")
    assert adapter.supports == frozenset({"lookup"}) and adapter.shape == "Good"
    assert not declared_policy(Good).exact  # no policy declared: @any


@pytest.mark.parametrize("make, says", [
    (lambda: Good(4, 2), "is not a class"),
    (lambda: type("NoObserve", (), {"__init__": Good.__init__, "admit": Good.admit, "free": Good.free}),
     "NoObserve has no observe"),
    (lambda: type("Flies", (Good,), {"supports": {"fly"}}), "Flies.supports: unknown operation 'fly'"),
    (lambda: type("NoFork", (Good,), {"supports": {"fork"}}), "NoFork declares 'fork' in supports but has no such method"),
    (lambda: type("Nameless", (Good,), {"policy": "no_such_policy"}), "Nameless.policy: unknown policy 'no_such_policy'"),
    (lambda: type("Numbered", (Good,), {"policy": 7}), "Numbered.policy must be a policy name or a dict"),
])
def test_a_class_that_breaks_the_contract_is_refused_with_one_line(make, says):
    with pytest.raises(ValueError, match=None) as refused:
        contract_adapter(make(), "adapter.py:X")
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_a_named_policy_is_that_policy():
    from oracle.prefix.policy import POLICIES

    assert declared_policy(type("V", (Good,), {"policy": "vllm_v1"})) is POLICIES["vllm_v1"]
