"""A family's adapter served whole by the child process of a Python submission (oracle/child.py): the family's
server script builds the adapter around the loaded submission (`serve_adapter`, in oracle/serve.py), and the
grader holds a RemoteAdapter whose every method call the child answers, by name, in JSON. For a family whose
adapter is standard library only; the grader never imports the submission. Every answer is checked here against the
shape the family declares for its method (`replies`, oracle/reply_shape.py; a method it declares none for answers
null) before the family reads it: one that does not fit is the submission's failure, "a reply the grader cannot read".

    served = Served(target, sandbox, server=Path(".../adapter.py"), failure=Failure, renew="start", replies={...})
    served.load()        # LoadFailure when the submission does not load
    adapter = served()   # one per program; its `renew` method starts it afresh in the child
"""

from pathlib import Path
from typing import Any, Mapping

from oracle.child import PythonChild, PythonTarget
from oracle.reply_shape import misfit
from oracle.sandbox import Sandbox


class RemoteAdapter:
    def __init__(self, child: PythonChild, renew: str, failure: type[Exception], replies: Mapping[str, Any]):
        self.child, self.renew, self.failure, self.replies = child, renew, failure, replies

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any) -> Any:
            if method == self.renew:
                self.child.ask({"op": "new"}, f"while starting {method}")
            ret = self.child.ask({"op": "call", "method": method, "args": list(args)}, f"in {method}").get("ret")
            why = misfit(ret, self.replies.get(method), f"{method}'s answer")
            if why:
                self.child.stop()
                raise self.failure(f"sent a reply the grader cannot read: {why}")
            return ret

        return call

    def close(self) -> None:
        """Closes the adapter in the child, if it is still running; a failure there is not the grader's."""
        try:
            if self.child.running:
                self.__getattr__("close")()
        except self.failure:
            pass


class Served:
    """One child process serving a submission through the family's server; calling it makes an adapter."""

    def __init__(self, target: PythonTarget, sandbox: Sandbox, *, server: Path, failure: type[Exception], renew: str,
                 replies: Mapping[str, Any], timeout: float = 2.0):
        self.child = PythonChild(target, sandbox, server=server, failure=failure, timeout=timeout)
        self.renew, self.failure, self.replies = renew, failure, replies

    def load(self) -> None:
        self.child.start()

    def close(self) -> None:
        self.child.close()

    def __call__(self) -> RemoteAdapter:
        return RemoteAdapter(self.child, self.renew, self.failure, self.replies)
