"""oracle/prefix/driver.py: one checked call at a time, on our engine in this process (no child, no Hypothesis):
the calls it makes and records, the core's Divergence naming the rule a difference breaks, and the take-over that
lets a directed program read on past another rule's free order, as its own takes show it."""

import pytest

import engine.prefix
from oracle.difference import CRASH
from oracle.prefix.adapters.lab import LabAdapter
from oracle.checked import Divergence
from oracle.prefix.driver import Driver
from oracle.prefix.observation import ImplementationFailure
from oracle.prefix.policy import LAB


def driver(**options) -> Driver:
    return Driver(LabAdapter(engine.prefix, "engine.prefix", LAB), **options)


def test_the_driver_makes_each_call_and_records_what_it_returned():
    pool = driver()
    pool.start(6, 4)
    assert pool.admit([1, 2, 3, 4, 5]) == 0 and pool.admit([1, 2, 3, 4, 6]) == 1  # the second hits block 1
    pool.free(0)
    assert [(step.op, got) for step, got in pool.made] == [("start", None), ("admit", (True, 0)),
                                                            ("admit", (True, 1)), ("free", None)]
    assert pool.stats.events["hit"] == 1 and pool.stats.events["miss"] == 1


def test_a_difference_is_the_core_divergence_naming_its_rule():
    pool = driver()
    pool.start(6, 4)
    pool.admit(list(range(1, 9)))
    pool.model.free.reverse()  # the model now expects another free order: the free_queue rule's aspect
    with pytest.raises(Divergence) as raised:
        pool.admit([50])
    assert raised.value.difference.aspect == "block_table" and raised.value.rule == "free_queue"
    assert raised.value.op == "admit" and str(raised.value).startswith("admit(req 1, 1 tokens): req 1 block_table[0]")
    assert raised.value.made[-1][0].op == "admit"  # the calls the pool received, for the listing


def test_a_failing_call_is_a_crash_that_breaks_no_rule():
    pool = driver()
    pool.start(4, 2)

    def fail(*_):
        raise ImplementationFailure("allocate_slots raised KeyError: 7")

    pool.impl.admit = fail
    with pytest.raises(Divergence) as raised:
        pool.admit([1])
    assert raised.value.difference.aspect == CRASH and raised.value.rule == ""
    assert str(raised.value) == "admit(req 0, 1 tokens): allocate_slots raised KeyError: 7"


def test_a_free_order_is_taken_over_only_where_the_pools_takes_showed_it():
    pool = driver(follow=False, by_takes=True)
    pool.start(6, 4)
    pool.admit(list(range(1, 9)))  # blocks 1, 2; free 3, 4, 5
    assert not pool.take_over_free_order()  # no take showed another order
    pool.model.free.reverse()  # the model now expects another free order: 5, 4, 3
    with pytest.raises(Divergence) as raised:
        pool.admit([50])  # the pool takes 3
    assert raised.value.difference.aspect == "free order" and raised.value.rule == "free_queue"
    assert pool.take_over_free_order()  # the admit made again on the model, in the queue the take showed
    assert pool.model.requests[1].table == [3] and pool.model.free == [5, 4]
    assert not pool.take_over_free_order()  # once
