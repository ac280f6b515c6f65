"""oracle/prefix/taken_order.py and the driver judging a free's order by the program's own takes (by_takes), on our
engine and on forward_order_free's in this process (the served pools and the hostile ones: tests/test_tamper_review5.py,
test_tamper_review6.py, test_tamper_review7.py). Nothing but the program's own calls is made on the pool, and the
free queue it shows is not read for its order."""

from typing import Any

import pytest

import engine.prefix
from oracle.prefix.adapters.lab import LabAdapter
from oracle.prefix.divergence import Divergence
from oracle.prefix.driver import Driver
from oracle.prefix.observation import Observation
from oracle.prefix.policy import LAB
from oracle.prefix.taken_order import taken_order
from tests.test_prefix_teeth import broken_engine  # noqa: F401 (a fixture)


class Recorded:
    """A pool whose every call is recorded, its shown free queue replaced by `shown` (a lie) when given."""

    def __init__(self, module: Any, shown: Any = None):
        self.pool, self.shown, self.calls = LabAdapter(module, module.__name__, LAB), shown, []

    def __getattr__(self, method: str) -> Any:
        pool = getattr(self.pool, method)
        if method in ("observe", "close", "policy", "supports", "names"):
            return pool

        def called(*args: Any) -> Any:
            self.calls.append((method, args))
            return pool(*args)

        return called

    def observe(self) -> Observation:
        seen = self.pool.observe()
        if self.shown is None:
            return seen
        return Observation(seen.tables, tuple(self.shown(seen)), seen.ref_counts, seen.hashes, seen.indexed)


def driver(pool: Any) -> Driver:
    return Driver(pool, follow=False, by_takes=True)


def test_agreeing_takes_are_no_difference():
    assert taken_order([5, 4, 3], [5, 4], [5, 4], [(0, [4, 3])]) is None


def test_a_free_put_back_in_the_opposite_order_is_the_release_orders():
    taken = taken_order([5, 4, 3, 2, 1], [5, 4, 3, 2, 1], [5, 1, 2, 3, 4], [(0, [4, 3, 2, 1])])
    assert taken.difference.aspect == "release order" and taken.queue == [5, 1, 2, 3, 4]
    assert str(taken.difference) == ("release order: the blocks free(req 0) put back: expected [4, 3, 2, 1], "
                                     "got [1, 2, 3, 4] (in the order this call takes them from the free queue)")


def test_as_far_as_the_takes_show_it():
    # two of the free's blocks taken (the queue's head is the other free's): the two shown, the rest read on reversed
    taken = taken_order([6, 3, 1, 9], [6, 3], [6, 1], [(2, [6]), (0, [3, 1])])
    assert taken.difference.aspect == "release order" and taken.difference.expected == [3]
    assert taken.difference.got == [1] and taken.queue == [6, 1, 3, 9]


def test_takes_no_free_explains_are_the_free_queues():
    taken = taken_order([4, 5, 2, 1], [4, 5, 2], [1, 2, 4], [(1, [2]), (0, [1])])
    assert taken.difference.aspect == "free order" and taken.queue == [1, 2, 4, 5]
    assert str(taken.difference) == ("free order: the free queue's head: expected [4, 5, 2], got [1, 2, 4] (the blocks "
                                     "this call takes from it, in its table's order)")


def test_our_engine_agrees_and_nothing_but_the_programs_calls_is_made():
    pool = Recorded(engine.prefix)
    graded = driver(pool)
    graded.start(6, 4)
    graded.admit(list(range(1, 14)))
    graded.free(0)
    graded.admit(list(range(20, 37)))
    assert [method for method, _ in pool.calls] == ["start", "admit", "free", "admit"]
    assert graded.model.requests[1].table == [5, 4, 3, 2, 1]


def test_a_wrong_release_order_fails_where_the_program_takes_the_blocks(broken_engine):  # noqa: F811
    module = __import__(broken_engine("forward_order_free"))
    graded = driver(Recorded(module))
    graded.start(6, 4)
    graded.admit(list(range(1, 14)))  # req 0: blocks 1, 2, 3, 4
    graded.free(0)  # the pool puts them back head first: nothing judged yet
    with pytest.raises(Divergence) as raised:
        graded.admit(list(range(20, 37)))  # takes 5, 1, 2, 3, 4
    assert raised.value.rule == "reverse_order_free" and raised.value.op == "admit"
    assert raised.value.difference.expected == [4, 3, 2, 1] and raised.value.difference.got == [1, 2, 3, 4]
    assert graded.take_over_free_order()  # the model reads on in the pool's order, the admit made again on it
    assert graded.model.requests[1].table == [5, 1, 2, 3, 4] and graded.model.free == []
    graded.free(1)  # puts back 5, 1, 2, 3, 4 head first again: its first take shows it
    with pytest.raises(Divergence) as raised:
        graded.admit([40])
    assert raised.value.difference.expected == [4] and raised.value.difference.got == [5]


def test_a_free_queue_shown_in_a_correct_order_does_not_pass_a_wrong_one(broken_engine):  # noqa: F811
    """free_queue_lie's act in this process: the queue shown is the model's own, the takes are the pool's."""
    module = __import__(broken_engine("forward_order_free"))
    graded = driver(Recorded(module, shown=lambda seen: graded.model.free))
    graded.start(6, 4)
    graded.admit(list(range(1, 14)))
    graded.free(0)
    with pytest.raises(Divergence) as raised:
        graded.admit(list(range(20, 37)))
    assert raised.value.rule == "reverse_order_free"


def test_a_queue_shown_wrong_is_not_a_difference_where_the_takes_agree():
    """The shown queue's order is a claim, read for nothing: our engine showing it reversed is still judged right."""
    graded = driver(Recorded(engine.prefix, shown=lambda seen: tuple(reversed(seen.free))))
    graded.start(6, 4)
    graded.admit(list(range(1, 14)))
    graded.free(0)
    graded.admit(list(range(20, 37)))


def test_the_free_queues_own_order_is_charged_to_free_queue(broken_engine):  # noqa: F811
    """free_to_front_hashed: hashed blocks go to the queue's front, which no free's release order explains."""
    module = __import__(broken_engine("free_to_front_hashed"))
    graded = driver(Recorded(module))
    graded.start(6, 4)
    for tokens in ([1, 2, 3, 4], [10, 11, 12, 13], [20, 21, 22]):
        graded.admit(tokens)
    graded.free(1)
    graded.free(0)
    with pytest.raises(Divergence) as raised:
        graded.admit(list(range(30, 42)))
    assert raised.value.rule == "free_queue" and raised.value.difference.aspect == "free order"
    assert raised.value.difference.expected == [4, 5, 2] and raised.value.difference.got == [1, 2, 4]


def test_a_free_put_back_in_any_other_order_is_the_release_orders():
    """release_swapped (review 8): head first with the first two swapped, never exactly the opposite order."""
    taken = taken_order([5, 4, 3, 2, 1], [5, 4, 3, 2, 1], [5, 2, 1, 3, 4], [(0, [4, 3, 2, 1])])
    assert taken.difference.aspect == "release order" and taken.queue == [5, 2, 1, 3, 4]
    assert taken.difference.expected == [4, 3, 2, 1] and taken.difference.got == [2, 1, 3, 4]


def test_a_partly_shown_permutation_reads_on_in_the_models_order_for_the_rest():
    taken = taken_order([9, 4, 3, 2, 1], [9, 4, 3], [9, 3, 4], [(0, [4, 3, 2, 1])])
    assert taken.difference.aspect == "release order" and taken.difference.got == [3, 4]
    assert taken.queue == [9, 3, 4, 2, 1]


def test_another_frees_block_first_is_the_free_queues():
    # the queue's head is free 1's block, the call takes free 0's first: no reordering within a free explains it
    taken = taken_order([7, 4, 3], [7, 4], [4, 7], [(1, [7]), (0, [4, 3])])
    assert taken.difference.aspect == "free order"


def test_a_block_from_the_wrong_end_of_the_queue_is_the_free_queues():
    taken = taken_order([5, 4, 3, 2, 1], [5, 4], [1, 4], [(0, [4, 3, 2, 1])])
    assert taken.difference.aspect == "free order"
