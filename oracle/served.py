"""A family's adapter served whole by the child process of a Python submission (oracle/child.py): the family's
server script builds the adapter around the loaded submission (`serve_adapter`, in oracle/serve.py), and the
grader holds a RemoteAdapter whose every method call the child answers, by name, in JSON. For a family whose
adapter is standard library only; the grader never imports the submission.

    served = Served(target, sandbox, server=Path(".../adapter.py"), failure=Failure, renew="start")
    served.load()        # LoadFailure when the submission does not load
    adapter = served()   # one per program; its `renew` method starts it afresh in the child
"""

from pathlib import Path
from typing import Any

from oracle.child import PythonChild, PythonTarget
from oracle.sandbox import Sandbox


class RemoteAdapter:
    def __init__(self, child: PythonChild, renew: str, failure: type[Exception]):
        self.child, self.renew, self.failure = child, renew, failure

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any) -> Any:
            if method == self.renew:
                self.child.ask({"op": "new"}, f"while starting {method}")
            return self.child.ask({"op": "call", "method": method, "args": list(args)}, f"in {method}").get("ret")

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
                 timeout: float = 2.0):
        self.child = PythonChild(target, sandbox, server=server, failure=failure, timeout=timeout)
        self.renew, self.failure = renew, failure

    def load(self) -> None:
        self.child.start()

    def close(self) -> None:
        self.child.close()

    def __call__(self) -> RemoteAdapter:
        return RemoteAdapter(self.child, self.renew, self.failure)
