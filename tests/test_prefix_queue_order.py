"""oracle/prefix/queue_order.py: the free order's second opinion, on our engine in this process (the served pool's
fresh processes are tests/test_tamper_review5.py's and tests/test_tamper_review6.py's). The drain's admits look like
the program's going on; a drain the pool does not grant one block each, or whose replay does not agree with the graded
run, fails the free, by the free's rule."""

from typing import Any

import pytest

import engine.prefix
from oracle.prefix.adapters.lab import LabAdapter
from oracle.prefix.divergence import Divergence
from oracle.prefix.driver import Driver
from oracle.prefix.policy import LAB
from oracle.prefix.queue_order import second_opinion


class Fresh:
    """Our engine's pool as a second opinion's fresh one: the admits it receives after the replay of `replayed`
    calls recorded (`drain`), and each answered by `answer` (None: the pool's own answer)."""

    def __init__(self, replayed: int, answer: Any = None):
        self.pool = LabAdapter(engine.prefix, "engine.prefix", LAB)
        self.replayed, self.answer, self.calls, self.drain = replayed, answer, 0, []

    def __getattr__(self, method: str) -> Any:
        pool = getattr(self.pool, method)
        if method in ("observe", "close"):
            return pool

        def called(*args: Any) -> Any:
            self.calls += 1
            if method != "admit" or self.calls <= self.replayed:
                return pool(*args)
            self.drain.append(args)
            return pool(*args) if self.answer is None else self.answer(self.pool, *args)

        return called


def graded(answer: Any = None) -> tuple[Driver, list[Fresh]]:
    """A driver of our engine judging each free's order by second opinions of `Fresh` pools (made afresh for each
    free, as a served pool's are: they replay the calls so far), and the pools made."""
    made: list[Fresh] = []
    impl = LabAdapter(engine.prefix, "engine.prefix", LAB)

    def fresh() -> Fresh:
        made.append(Fresh(len(driver.made), answer))
        return made[-1]

    driver = Driver(impl, follow=False, queue=second_opinion(impl, fresh))
    return driver, made


def test_the_drain_admits_the_programs_next_requests_one_round_token_each():
    driver, made = graded()
    driver.start(6, 4)
    driver.admit(list(range(1, 14)))  # req 0: blocks 1, 2, 3, 4
    driver.free(0)
    assert driver.taken == (5, 4, 3, 2, 1) == tuple(driver.model.free) and driver.stop == ""
    # the ids the program's own next admits get (req 1, 2, ...), one token each, round numbers past its own (13)
    assert made[0].drain == [(1, [20]), (2, [30]), (3, [40]), (4, [50]), (5, [60])]
    assert driver.admit([20, 21]) == 1  # the program goes on with the id the drain's first admit had


@pytest.mark.parametrize("answer, did", [
    (lambda pool, rid, tokens: (False, None), "was refused"),
    (lambda pool, rid, tokens: (True, 0), "was granted [], not one block of its own"),  # said accepted, given none
])
def test_a_drain_not_granted_one_block_each_fails_the_free_by_its_release_order(answer: Any, did: str):
    driver, _ = graded(answer)
    driver.start(6, 4)
    driver.admit(list(range(1, 14)))
    with pytest.raises(Divergence) as raised:
        driver.free(0)
    assert driver.taken == () and driver.stop == f"admit(req 1, tokens [20]) {did}"
    assert raised.value.difference.aspect == "release order" and raised.value.rule == "reverse_order_free"
    assert f"expected [5, 4, 3, 2, 1], got [] (as one-block admits take them, in a fresh process of the pool; " \
           f"admit(req 1, tokens [20]) {did}" in str(raised.value)
    assert "the pool did not give back blocks it must have" in str(raised.value)
    assert not driver.take_over_free_order()  # no order to read on in


def test_a_drain_refused_after_a_one_block_free_fails_it_by_the_free_queues_rule():
    driver, _ = graded(lambda pool, rid, tokens: (False, None) if rid == 3 else pool.admit(rid, tokens))
    driver.start(6, 4)
    driver.admit([1, 2, 3])  # req 0: block 1
    driver.admit([10, 11, 12])  # req 1: block 2
    with pytest.raises(Divergence) as raised:
        driver.free(0)  # the drain: req 2 granted block 3, req 3 refused
    assert raised.value.difference.aspect == "free order" and raised.value.rule == "free_queue"
    assert "expected [3, 4, 5, 1], got [3] " in str(raised.value)  # the queue as far as the pool lets it be seen
    assert "admit(req 3, tokens [30]) was refused" in str(raised.value)


def test_a_replay_that_does_not_agree_fails_the_free_too():
    driver, _ = graded()
    driver.start(6, 4)
    driver.admit(list(range(1, 14)))
    driver.queue = second_opinion(driver.impl, lambda: Fresh(0, lambda pool, rid, tokens: (False, None)))
    with pytest.raises(Divergence) as raised:
        driver.free(0)  # the replay's admit of req 0 is refused: not what the graded run's returned
    assert driver.taken == () and driver.stop == "replayed, call 2 returned otherwise than in the graded run"
    assert raised.value.rule == "reverse_order_free"
