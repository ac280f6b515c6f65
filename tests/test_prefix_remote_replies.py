"""oracle/prefix/remote.py's checks of what a prefix submission's child answers (the core's remote adapter,
oracle/served.py, with the family's table of answers), on the answers alone: each shape no adapter gives is "a reply
the grader cannot read", and the child is stopped. The child here is a queue of
answers (the transport is tested in tests/test_tamper_python2.py with real children)."""

import pytest

from oracle.prefix.observation import ImplementationFailure
from oracle.prefix.remote import READ, REPLIES, facts
from oracle.served import RemoteAdapter


class Answers:
    """Stands for the child process: answers each request with the next value, and notes a stop."""

    running, generation = True, 1

    def __init__(self, *answers):
        self.answers, self.stopped = list(answers), False

    def begin(self):
        pass

    def mark(self):
        return 0

    def ask(self, request, doing, timeout=None):
        return {"ret": self.answers.pop(0)}

    def stop(self):
        self.stopped = True


class Shape:
    shape, supports = "lab", frozenset({"lookup", "append", "fork", "reset"})
    shows = frozenset({"free", "ref_counts", "hashes", "indexed"})


def adapter(*answers) -> tuple[RemoteAdapter, Answers]:
    child = Answers(*answers)
    return RemoteAdapter(child, "start", ImplementationFailure, REPLIES, tuple(REPLIES), READ, facts(Shape, None)), child


GOOD = {"tables": [[0, [1, None]]], "free": [2, 3], "ref_counts": [[1, 1]], "hashes": [[1, "h"]], "indexed": [1],
        "lengths": None}


def test_well_formed_answers_are_read():
    seen, _ = adapter(GOOD)
    observation = seen.observe()
    assert observation.tables == {0: (1, None)} and observation.free == (2, 3) and observation.hashes == {1: "h"}
    assert adapter([True, 2])[0].admit(0, [1, 2]) == (True, 2) and adapter(None)[0].fork(0, 1) is None
    assert adapter([4, 5])[0].lookup([1]) == [4, 5] and adapter(False)[0].append(0, 1) is False


@pytest.mark.parametrize("call, answer, says", [
    (lambda a: a.admit(0, [1]), [1, 2], "admit's answer[0] is 1, not true or false"),
    (lambda a: a.admit(0, [1]), [True, "2"], "admit's answer[1] is '2', not an integer"),
    (lambda a: a.append(0, 1), 1, "append's answer is 1, not true or false"),
    (lambda a: a.lookup([1]), {"a": 1}, "lookup's answer is {'a': 1}, not a list"),
    (lambda a: a.lookup([1]), [1 << 64], "lookup's answer[0] is 18446744073709551616, out of"),
    (lambda a: a.observe(), {"tables": []}, "observe's answer is {'tables': []}, not an object of"),
    (lambda a: a.observe(), {**GOOD, "tables": None}, "observe's answer['tables'] is None, not a list"),
    # what a lab pool shows is its shape's: a free queue answered null would skip the checks of its order
    (lambda a: a.observe(), {**GOOD, "free": None}, "observe's free is null, where every lab pool shows it"),
    (lambda a: a.observe(), {**GOOD, "indexed": None, "hashes": None}, "observe's hashes is null"),
    (lambda a: a.observe(), {**GOOD, "ref_counts": [[1]]}, "observe's answer['ref_counts'][0] is [1], not a list of 2"),
    (lambda a: a.observe(), {**GOOD, "hashes": [[1, 5]]}, "observe's answer['hashes'][0][1] is 5, not a string"),
])
def test_a_reply_of_another_shape_fails_the_step_and_stops_the_child(call, answer, says):
    remote, child = adapter(answer)
    with pytest.raises(ImplementationFailure, match="sent a reply the grader cannot read") as failed:
        call(remote)
    assert says in str(failed.value) and child.stopped
