"""oracle/prefix/taken_order.py and the driver judging a free's order by the program's own takes (by_takes), on our
engine and on forward_order_free's in this process (the served pools and the hostile ones: tests/test_tamper_review5.py,
test_tamper_review6.py, test_tamper_review7.py). Nothing but the program's own calls is made on the pool, and the
free queue it shows is not read for its order."""

import types
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import engine.prefix
from oracle.prefix.adapters.lab import LabAdapter
from oracle.prefix.checks import OPERATIONS
from oracle.prefix.rules import TAKEN_OVER
from oracle.checked import Divergence
from oracle.prefix.driver import Driver
from oracle.prefix.observation import Observation
from oracle.prefix.policy import LAB
from oracle.prefix.programs import BY_ITEM
from oracle.prefix.rules import rule_of
from oracle.prefix.taken_order import taken_order, touch_explains
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


# -- a touch's order (review 9's touch_rotates_queue): a take order the call's hits on free blocks explain ----------

class RotatingPool(engine.prefix.KVCacheManager):
    """Our engine but for its touch: a hit on a free block takes it out by rotating the queue head to tail until the
    block is at the head (the blocks before it go to the tail), as tests/hostile_review9/touch_rotates_queue.py."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        pool = self.block_pool

        def touch(blocks: Any) -> None:
            for block in blocks:
                if block.ref_cnt == 0 and not block.is_null:
                    queue = pool.free_block_queue
                    while queue.head.next_free is not block:
                        queue.append(queue.popleft())
                    queue.popleft()
                block.ref_cnt += 1

        pool.touch = touch


def _requeue(queue: Any, blocks: list) -> None:
    for block in queue.get_all_free_blocks():
        queue.remove(block)
    for block in blocks:
        queue.append(block)


class DescendingPool(engine.prefix.KVCacheManager):
    """Our engine but for its free queue's first order: descending (a free queue's bug, no touch's)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        queue = self.block_pool.free_block_queue
        _requeue(queue, queue.get_all_free_blocks()[::-1])


class FreeToHeadPool(engine.prefix.KVCacheManager):
    """Our engine but for its free: a freed block goes to the queue's head (a free queue's bug, no touch's)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        pool, plain = self.block_pool, self.block_pool.free_blocks

        def free_blocks(blocks: Any) -> None:
            before = pool.free_block_queue.get_all_free_blocks()
            plain(blocks)
            every = pool.free_block_queue.get_all_free_blocks()
            _requeue(pool.free_block_queue, every[len(before):][::-1] + before)

        pool.free_blocks = free_blocks


class SortedPool(engine.prefix.KVCacheManager):
    """Our engine but for its free: the free queue is kept sorted by block id (Mini-YAIE's, not the lab's)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        pool, plain = self.block_pool, self.block_pool.free_blocks

        def free_blocks(blocks: Any) -> None:
            plain(blocks)
            every = pool.free_block_queue.get_all_free_blocks()
            _requeue(pool.free_block_queue, sorted(every, key=lambda block: block.block_id))

        pool.free_blocks = free_blocks


class FromTheTailPool(engine.prefix.KVCacheManager):
    """Our engine but for its takes: new blocks come from the queue's tail (a free queue's bug, no touch's)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        queue = self.block_pool.free_block_queue

        def popleft() -> Any:
            block = queue.tail.prev_free
            if block is queue.head:
                raise ValueError("no free blocks")
            queue.remove(block)
            return block

        queue.popleft = popleft


def module_of(manager: type) -> Any:
    return types.SimpleNamespace(KVCacheManager=manager, Request=engine.prefix.Request, __name__=manager.__name__)


def touch_program(graded: Driver) -> list[tuple[int, str, str]]:
    """touch's program on `graded`, read past as the directed check does: each difference (step, aspect, rule)."""
    met = []
    for number, step in enumerate(BY_ITEM["touch"].steps, 1):
        try:
            OPERATIONS[step.op](graded, *step.args)
        except Divergence as divergence:
            met.append((number, divergence.difference.aspect, divergence.rule))
            if divergence.difference.aspect not in TAKEN_OVER or not graded.take_over_free_order():
                break
    return met


def test_an_order_the_calls_touch_explains_is_the_touchs():
    # the queue 6, 2, 4, 3; the hit takes block 2 out; a rotation leaves 4, 3, 6 where the model has 6, 4, 3
    taken = taken_order([6, 4, 3], [6, 4, 3], [4, 3, 6], [(5, [6]), (3, [4]), (2, [3])], before_hits=[6, 2, 4, 3])
    assert taken.difference.aspect == "touch order" and taken.queue == [4, 3, 6]
    assert rule_of(taken.difference, "admit") == "touch"
    assert str(taken.difference) == ("touch order: the free queue once the hit took block 2 out of it: expected "
                                     "[6, 4, 3], got [4, 3, 6] (the blocks this call takes from it, in its table's "
                                     "order: a hit leaves the other free blocks in their order)")


def test_an_order_no_touch_explains_is_the_free_queues():
    # freed blocks put at the head (or a sorted free list): 3, 4, 6; the blocks after the one hit, 4 and 3, swapped
    frees = [(5, [6]), (3, [4]), (2, [3])]
    assert taken_order([6, 4, 3], [6, 4, 3], [3, 4, 6], frees, before_hits=[6, 2, 4, 3]).difference.aspect == \
        "free order"
    # the rotation's order without a hit in the call: nothing touched explains it
    assert taken_order([6, 2, 4, 3], [6, 2, 4], [4, 3, 6], frees + [(1, [2])]).difference.aspect == "free order"


def test_only_the_blocks_before_the_last_one_hit_may_move():
    assert touch_explains([5, 6, 1], [6, 5])  # a touch that walks from the head may leave what it passed in any order
    assert touch_explains([1, 2, 3, 4, 5], [5, 1, 3]) and touch_explains([1, 2, 3, 4, 5], [3, 5, 1])  # 2, 4 hit
    assert not touch_explains([1, 2, 3, 4, 5], [1, 3, 5, 4])  # 4 and 5, after the only block hit (2), swapped
    assert not touch_explains([1, 2, 3], [1, 3])  # the model's own order: nothing to explain
    assert not touch_explains([1, 2, 3], [1, 2, 3])  # no block hit


@given(st.permutations(range(1, 8)), st.lists(st.integers(0, 6), min_size=1, max_size=3, unique=True),
       st.integers(1, 6), st.booleans())
def test_any_rotation_or_walk_from_the_head_is_named_the_touchs(queue, positions, takes, reversed_walk):
    """However many free blocks a call's hits take out, by rotating the queue or by walking it from its head and
    pushing back what it passed in the opposite order, the takes that differ from the model's are the touch's."""
    pool, touched = list(queue), [queue[i] for i in positions]
    for block in touched:
        at = pool.index(block)
        pool = pool[at + 1:] + pool[:at] if not reversed_walk else pool[:at][::-1] + pool[at + 1:]
    model = [block for block in queue if block not in touched]
    takes = min(takes, len(model))
    taken = taken_order(model, model[:takes], pool[:takes], [], before_hits=list(queue))
    assert taken is None or taken.difference.aspect == "touch order", (queue, touched, pool)
    if taken is not None:
        assert rule_of(taken.difference, "admit") == "touch" and taken.queue[:takes] == pool[:takes]


def test_touchs_program_names_a_rotating_touch_the_touchs():
    assert touch_program(driver(LabAdapter(module_of(RotatingPool), "rotating", LAB))) == [(13, "touch order", "touch")]
    assert touch_program(driver(LabAdapter(engine.prefix, "engine.prefix", LAB))) == []


def test_the_fuzz_names_a_rotating_touch_the_touchs_from_the_queue_shown():
    """The fuzz's driver (no takes judged, the queue the pool shows read): the blocks the call took, then the queue it
    shows after it, which before it was the model's."""
    graded = Driver(LabAdapter(module_of(RotatingPool), "rotating", LAB), follow=False)
    with pytest.raises(Divergence) as raised:
        touch_program_steps(graded)
    assert raised.value.rule == "touch" and raised.value.difference.aspect == "touch order"
    assert raised.value.difference.expected == [6, 4, 3] and raised.value.difference.got == [4, 3, 6]


def touch_program_steps(graded: Driver) -> None:
    for step in BY_ITEM["touch"].steps:
        OPERATIONS[step.op](graded, *step.args)


@pytest.mark.parametrize("pool", [FreeToHeadPool, SortedPool, FromTheTailPool, DescendingPool])
def test_touchs_program_names_the_free_queues_own_bugs_the_free_queues(pool: type):
    """The blocks after the one hit in touch's program were freed in an order a free to the head or a sorted list
    swaps; a free queue taken from the tail, or started descending, is read past from its first take on (the model
    reads on in the pool's queue as far as the takes show it, the rest a guess) and no touch is named after it."""
    met = touch_program(driver(LabAdapter(module_of(pool), pool.__name__, LAB)))
    assert met and {(aspect, rule) for _, aspect, rule in met} == {("free order", "free_queue")}, met
