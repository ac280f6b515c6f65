"""oracle/served.py's remote adapter, on a child that is a queue of answers (the transport is tested with real
children in tests/test_tamper_python2.py): only the calls of the family's table cross, the facts it gives are the
grader's own, a fresh adapter is made in the child by the method that starts it, an answer is checked then read, and
the adapter in the child is closed only once started; a call's arguments made by the grader before they cross, a
method the grader answers alone, and what the submission printed since the adapter's first call."""

import pytest

from oracle.served import RemoteAdapter


class Failure(Exception):
    pass


class Child:
    running = True

    def __init__(self, *answers):
        self.answers, self.asked, self.stopped = list(answers), [], False
        self.generation, self.printed, self.sent = 1, "", []

    def begin(self):
        self.running = True

    def mark(self):
        return len(self.printed)

    def output(self, since=0):
        return self.printed[since:]

    def ask(self, request, doing, timeout=None):
        self.asked.append((request.get("op"), request.get("method"), doing))
        self.sent.append(request.get("args"))
        return {"ret": self.answers.pop(0) if request.get("op") == "call" else None}

    def stop(self):
        self.stopped, self.running = True, False


def remote(child: Child) -> RemoteAdapter:
    return RemoteAdapter(child, "start", Failure, {"start": None, "size": int, "close": None},
                         methods=("start", "size", "close"), read={"size": lambda answer, adapter: answer * 10},
                         facts={"shape": "toy", "supports": frozenset({"size"})})


def test_only_the_tables_calls_cross_and_the_facts_are_the_graders_own():
    child = Child()
    adapter = remote(child)
    assert adapter.shape == "toy" and adapter.supports == {"size"}
    assert getattr(adapter, "domain", None) is None  # not a call of the table: nothing asked
    with pytest.raises(AttributeError):
        adapter.observe
    assert child.asked == []


def test_the_starting_method_makes_a_fresh_adapter_and_an_answer_is_checked_then_read():
    child = Child(None, 4, "four")
    adapter = remote(child)
    adapter.start()
    assert adapter.size() == 40
    assert child.asked == [("new", None, "while starting start"), ("call", "start", "in start"),
                           ("call", "size", "in size")]
    with pytest.raises(Failure, match="sent a reply the grader cannot read: size's answer is 'four', not an integer"):
        adapter.size()
    assert child.stopped


def test_close_reaches_the_child_only_once_started_and_end_process_stops_it():
    child = Child(None, None)
    adapter = remote(child)
    adapter.close()  # never started: the child made no adapter to close
    assert child.asked == []
    adapter.start()
    adapter.close()
    adapter.close()  # once
    assert [method for _, method, _ in child.asked] == [None, "start", "close"]
    adapter.end_process()
    assert child.stopped


def test_arguments_written_by_the_grader_a_local_method_and_the_output_since_the_first_call():
    child = Child(7)
    child.printed = "before"
    adapter = RemoteAdapter(child, None, Failure, {"put": int}, methods=("put",),
                            write={"put": lambda args, adapter: [args[0].upper()]},
                            local={"peek": lambda adapter, n: ("peeked", n, adapter.started)}, facts={"shape": "toy"})
    assert adapter.peek(3) == ("peeked", 3, False) and child.asked == []  # the grader's alone: nothing crosses
    assert adapter.output == ""  # no call yet
    assert adapter.put("x") == 7 and child.sent == [["X"]]  # no "new": the child's adapter lasts its process
    assert adapter.started and adapter.peek(0)[2]
    child.printed += " and after"
    assert adapter.output == " and after"
    adapter.close()  # "close" is not in the table: nothing crosses
    assert len(child.asked) == 1
    adapter.end_process()
    assert child.stopped and not adapter.started and adapter.output == ""
