"""oracle/serve.py: the loop every family's child server shares, driven here in this process over real pipes
with a server of two operations. Each way an operation can end is one reply; a fatal one is the last."""

import json
import os

from oracle import serve


class Failed(Exception):
    """A family's failure whose text is the whole label."""


class Echo(serve.Server):
    labelled = (Failed,)

    def handle(self, request: dict) -> dict:
        if request["op"] == "echo":
            return {"ret": request["value"]}
        if request["op"] == "fail":
            raise Failed("the adapter says no")
        if request["op"] == "fatal":
            raise serve.Fatal("called sys.exit(3) in echo")
        if request["op"] == "raise":
            raise KeyError(7)
        return {"ret": object()}  # not JSON: sent as its text

    def during(self, request: dict) -> str:
        return f" in {request['op']}"


def served(requests: list[dict]) -> list[dict]:
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    for request in requests:
        serve.write(req_w, json.dumps(request).encode())
    os.close(req_w)
    Echo(rep_w).serve(req_r)
    os.close(req_r)
    os.close(rep_w)
    try:
        replies = []
        while (reply := serve.receive(rep_r)) is not None:
            replies.append(reply)
        return replies
    finally:
        os.close(rep_r)


def test_each_way_an_operation_ends_is_one_reply() -> None:
    got = served([{"op": "echo", "value": [1, "x"]}, {"op": "fail"}, {"op": "raise"}, {"op": "object"}])
    assert got[:3] == [{"ret": [1, "x"]}, {"failure": "the adapter says no", "fatal": False},
                       {"failure": "raised KeyError: 7", "fatal": False}]
    assert got[3]["ret"].startswith("<object object at ")


def test_a_base_exception_says_where_and_text_is_bounded() -> None:
    server = Echo(-1)
    assert server.during({"op": "echo"}) == " in echo"

    class Loud:
        def __str__(self) -> str:
            raise SystemExit(1)

    assert serve.text(Loud()) == "<Loud>"
    assert serve.text("x" * 600) == "x" * 500 + "..."
    assert serve.load_error(SystemExit(2)) == "called sys.exit(2) while loading"
    assert serve.Server(-1).during({"op": "echo"}) == ""  # a family's server words it, if it wants to


def test_a_fatal_reply_is_the_last_one() -> None:
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    for request in ({"op": "echo", "value": 1}, {"op": "fatal"}, {"op": "echo", "value": 2}):
        serve.write(req_w, json.dumps(request).encode())
    os.close(req_w)
    pid = os.fork()
    if pid == 0:  # the server, as in the sandbox: it exits after its fatal reply
        try:
            Echo(rep_w).serve(req_r)
        finally:
            os._exit(1)
    os.close(req_r)
    os.close(rep_w)
    _, status = os.waitpid(pid, 0)
    replies = []
    while (reply := serve.receive(rep_r)) is not None:
        replies.append(reply)
    os.close(rep_r)
    assert os.waitstatus_to_exitcode(status) == 0
    assert replies == [{"ret": 1}, {"failure": "called sys.exit(3) in echo", "fatal": True}]


def test_call_words_an_implementations_exception_as_an_adapter_failure() -> None:
    """A served adapter's `call`: the value, or an AdapterFailure naming the call and the exception, its text bounded."""
    assert serve.call("add", lambda a, b: a + b, 2, 3) == 5
    try:
        serve.call("allocate", lambda: {}["x" * 900])
    except serve.AdapterFailure as failure:
        said = str(failure)
    assert said.startswith("allocate raised KeyError: 'xxx") and said.endswith("...")
    assert len(said) == len("allocate raised KeyError: ") + serve.MAX_TEXT + 3
