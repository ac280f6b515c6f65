"""A blockspace submission graded from outside: its manager class and our adapter run in a sandboxed child
(serve.py over oracle/child.py), and the grader holds a RemoteAdapter with the adapter's methods, each
answered by the child. JSON only; the grader never imports the submission."""

from pathlib import Path
from typing import Any

from oracle.blockspace.adapter import Failure
from oracle.child import PythonChild, PythonTarget
from oracle.sandbox import Sandbox

ORACLE = Path(__file__).resolve().parents[1]


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
            if self.child.running:
                self.__getattr__("close")()
        except Failure:
            pass


class RemoteManager:
    """One child process serving a submission; calling it makes an adapter (one per program)."""

    def __init__(self, target: PythonTarget, sandbox: Sandbox, timeout: float = 2.0):
        area = sandbox.area("blockspace-support")
        for name in ("serve.py", "blockspace/adapter.py", "__init__.py", "blockspace/__init__.py"):
            (area / "oracle" / name).parent.mkdir(parents=True, exist_ok=True)
            (area / "oracle" / name).write_text("" if name.endswith("__init__.py") else (ORACLE / name).read_text())
        for path in [area, *area.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        self.child = PythonChild(target, sandbox, server=Path(__file__).with_name("serve.py"), failure=Failure,
                                 timeout=timeout, support=area, server_args=(str(area),))

    def load(self) -> None:
        self.child.start()

    def __call__(self) -> RemoteAdapter:
        return RemoteAdapter(self.child)

    def close(self) -> None:
        self.child.close()
