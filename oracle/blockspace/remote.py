"""A blockspace submission graded from outside: its manager class and our adapter run in a sandboxed child
(adapter.py is the server, over oracle/child.py); the grader holds a RemoteAdapter whose every call the child
answers. JSON only; the grader never imports the submission."""

from pathlib import Path
from typing import Any

from oracle.blockspace.adapter import Failure
from oracle.child import PythonChild, PythonTarget
from oracle.sandbox import Sandbox


class RemoteAdapter:
    def __init__(self, child: PythonChild):
        self.child = child

    def __getattr__(self, method: str) -> Any:
        return lambda *args: self.child.ask({"op": "call", "method": method, "args": list(args)}, f"in {method}").get("ret")

    def start(self, *args: Any) -> None:
        self.child.ask({"op": "new"}, "while starting")
        self.__getattr__("start")(*args)

    def close(self) -> None:
        try:
            self.child.running and self.__getattr__("close")()
        except Failure:
            pass


class RemoteManager:
    """One child process serving a submission; calling it makes an adapter (one per program)."""

    def __init__(self, target: PythonTarget, sandbox: Sandbox, timeout: float = 2.0):
        self.child = PythonChild(target, sandbox, server=Path(__file__).with_name("adapter.py"), failure=Failure,
                                 timeout=timeout)
        self.load, self.close = self.child.start, self.child.close

    def __call__(self) -> RemoteAdapter:
        return RemoteAdapter(self.child)
