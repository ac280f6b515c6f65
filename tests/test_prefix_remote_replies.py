"""oracle/prefix/remote.py's checks of what a prefix submission's child answers, on the answers alone: each shape
no adapter gives is "a reply the grader cannot read", and the child is stopped. The child here is a queue of
answers (the transport is tested in tests/test_tamper_python2.py with real children)."""

import pytest

from oracle.prefix.observation import ImplementationFailure
from oracle.prefix.remote import RemoteAdapter


class Answers:
    """Stands for the child process: answers each request with the next value, and notes a stop."""

    running = True

    def __init__(self, *answers):
        self.answers, self.stopped = list(answers), False

    def ask(self, request, doing):
        return {"ret": self.answers.pop(0)}

    def stop(self):
        self.stopped = True


class Shape:
    shape, supports = "lab", frozenset({"lookup", "append", "fork", "reset"})
    shows = frozenset({"free", "ref_counts", "hashes", "indexed"})


def adapter(*answers) -> tuple[RemoteAdapter, Answers]:
    child = Answers(*answers)
    return RemoteAdapter(child, Shape, policy=None), child


GOOD = {"tables": [[0, [1, None]]], "free": [2, 3], "ref_counts": [[1, 1]], "hashes": [[1, "h"]], "indexed": [1]}


def test_well_formed_answers_are_read():
    seen, _ = adapter(GOOD)
    observation = seen.observe()
    assert observation.tables == {0: (1, None)} and observation.free == (2, 3) and observation.hashes == {1: "h"}
    assert adapter([True, 2])[0].admit(0, [1, 2]) == (True, 2) and adapter(None)[0].fork(0, 1) is None
    assert adapter([4, 5])[0].lookup([1]) == [4, 5] and adapter(False)[0].append(0, 1) is False


@pytest.mark.parametrize("call, answer, says", [
    (lambda a: a.admit(0, [1]), [1, 2], "admit did not answer [accepted, hits]"),
    (lambda a: a.admit(0, [1]), [True, "2"], "admit's hits is not a 64-bit integer"),
    (lambda a: a.append(0, 1), 1, "append did not answer true or false"),
    (lambda a: a.lookup([1]), {"a": 1}, "get_computed_blocks is not a list"),
    (lambda a: a.lookup([1]), [1 << 64], "an entry of get_computed_blocks is not a 64-bit integer"),
    (lambda a: a.observe(), {"tables": []}, "did not answer the five fields"),
    (lambda a: a.observe(), {**GOOD, "tables": None}, "observe's tables is null"),
    # what a lab pool shows is its shape's: a free queue answered null would skip the checks of its order
    (lambda a: a.observe(), {**GOOD, "free": None}, "observe's free is null, where every lab pool shows it"),
    (lambda a: a.observe(), {**GOOD, "indexed": None, "hashes": None}, "observe's hashes is null"),
    (lambda a: a.observe(), {**GOOD, "ref_counts": [[1]]}, "ref_counts is not a list of [id, value] pairs"),
    (lambda a: a.observe(), {**GOOD, "hashes": [[1, 5]]}, "a hash is not text"),
])
def test_a_reply_of_another_shape_fails_the_step_and_stops_the_child(call, answer, says):
    remote, child = adapter(answer)
    with pytest.raises(ImplementationFailure, match="sent a reply the grader cannot read") as failed:
        call(remote)
    assert says in str(failed.value) and child.stopped
