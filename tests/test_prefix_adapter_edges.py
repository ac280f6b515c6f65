"""Adapter edges of the prefix family: modules without a Request class, implementations that raise or whose
state cannot be read, multimap indexes, and the family registry read from pyproject.toml."""

from types import SimpleNamespace

import pytest

import engine.prefix as lab
from oracle.family import _from_pyproject, families
from oracle.prefix.adapters import blocks_of
from oracle.prefix.adapters.lab import LabAdapter, PlainRequest
from oracle.prefix.adapters.yaie import YaieAdapter
from oracle.prefix.machine import Divergence, machine_for
from oracle.prefix.observation import ImplementationFailure
from oracle.runner import fuzz
from tests.prefix_shapes import yaie_shape


def machine(adapter_factory):
    return machine_for(adapter_factory)()


def test_lab_shape_without_a_request_class_gets_plain_requests():
    target = SimpleNamespace(KVCacheManager=lab.KVCacheManager)
    report = fuzz(families()["prefix"], "ns", lambda: LabAdapter(target, "ns"), examples=30, steps=15, seed=2)
    assert report.passed, report.divergence
    assert PlainRequest("a", [1, 2]).num_tokens == 2


class RaisingFree(lab.KVCacheManager):
    def free(self, request):
        raise RuntimeError("boom")


def test_an_implementation_that_raises_is_a_divergence_naming_the_call():
    state = machine(lambda: LabAdapter(SimpleNamespace(KVCacheManager=RaisingFree), "raising"))
    state.start(num_blocks=4, block_size=2)
    with pytest.raises(Divergence, match=r"^free\(req 0, not live\): free raised RuntimeError: boom$"):
        state.free_unknown(rid=0)


class Unreadable(lab.KVCacheManager):
    def __init__(self, block_size, num_blocks):
        super().__init__(block_size, num_blocks)
        self.block_pool = SimpleNamespace(fork_block=None)


def test_unreadable_state_is_a_divergence():
    state = machine(lambda: LabAdapter(SimpleNamespace(KVCacheManager=Unreadable), "unreadable"))
    with pytest.raises(Divergence, match=r"^start\(4 blocks of 2 tokens\): state unreadable: "):
        state.start(num_blocks=4, block_size=2)


def test_fork_that_raises_something_else_is_an_implementation_failure():
    adapter = LabAdapter(lab, "lab")
    adapter.start(4, 2)
    adapter.admit(0, [1, 2, 3])
    adapter.pool.fork_block = lambda block: 1 / 0
    with pytest.raises(ImplementationFailure, match="fork_block raised ZeroDivisionError"):
        adapter.fork(0, 0)


def test_yaie_adapter_failures():
    broken = SimpleNamespace(KVCacheManager=lambda *a: SimpleNamespace(allocate_blocks=lambda rid, n: 1 / 0))
    adapter = YaieAdapter(broken, "broken")
    adapter.start(4, 2)
    with pytest.raises(ImplementationFailure, match="allocate_blocks raised ZeroDivisionError"):
        adapter.admit(0, [1])
    with pytest.raises(ImplementationFailure, match="state unreadable"):
        adapter.observe()
    assert YaieAdapter(yaie_shape, "yaie").supports == frozenset({"copy"})


def test_a_multimap_index_is_read_as_its_blocks():
    assert blocks_of({3: "a", 5: "b"}) == ["a", "b"] and blocks_of(["a"]) == ["a"] and blocks_of("a") == ["a"]


def test_the_registry_in_pyproject_names_every_family():
    assert _from_pyproject() == {"hw3": "oracle.hw3:FAMILY", "prefix": "oracle.prefix:FAMILY",
                                 "blockspace": "oracle.blockspace:FAMILY"}
    assert sorted(families()) == ["blockspace", "hw3", "prefix"]
