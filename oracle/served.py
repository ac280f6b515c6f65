"""A family's adapter served whole by the child process of a Python submission (oracle/child.py): the family's
server script builds the adapter around the loaded submission (`serve_adapter`, in oracle/serve.py), and the
grader holds a RemoteAdapter whose every method call the child answers, by name, in JSON. For a family whose
adapter is standard library only; the grader never imports the submission. Every answer is checked here against the
shape the family declares for its method (`replies`, oracle/reply_shape.py; a method it declares none for answers
null) before the family reads it (`read`: what it makes of an answer, per method; it may find one unreadable too):
one that does not fit is the submission's failure, "a reply the grader cannot read". The family's table of
operations (`methods`) decides which calls cross to the child; what the grader knows of its adapter without asking
(`facts`: its shape, policy, words) is the grader's own copy, never the child's. A call's arguments may be made by
the grader before they cross (`write`, per method: a handle as its number, memory the grader owns as its place), and
a method may be the grader's alone (`local`: answered here, never asking the child, such as reading memory the grader
owns). One remote implementation serves every family.

    served = Served(target, sandbox, server=Path(".../adapter.py"), failure=Failure, renew="start", replies={...})
    served.load()        # LoadFailure when the submission does not load
    adapter = served()   # one per program; its `renew` method starts it afresh in the child
"""

from pathlib import Path
from typing import Any, Callable, Mapping

from oracle.child import PythonChild, PythonTarget
from oracle.reply_shape import misfit
from oracle.sandbox import Sandbox


Read = Callable[[Any, "RemoteAdapter"], Any]  # (an answer that fits its shape, the adapter) -> what the family reads
Write = Callable[[tuple, "RemoteAdapter"], list]  # (a call's arguments, the adapter) -> what crosses to the child
Local = Callable[..., Any]  # (the adapter, *the call's arguments) -> the answer, made by the grader alone


class RemoteAdapter:
    """`renew`: the method that starts the adapter afresh in the child (None: the child's is one for its process);
    `started`: whether this adapter has called the child yet, in the process now running; `timeout` (None: the
    child's) bounds each call."""

    def __init__(self, child: PythonChild, renew: str | None, failure: type[Exception], replies: Mapping[str, Any],
                 methods: tuple[str, ...] | None = None, read: Mapping[str, Read] | None = None,
                 facts: Mapping[str, Any] | None = None, write: Mapping[str, Write] | None = None,
                 local: Mapping[str, Local] | None = None, timeout: float | None = None):
        self.child, self.renew, self.failure, self.replies = child, renew, failure, replies
        self.methods, self.read, self.started = methods, read or {}, False
        self.write, self.local, self.timeout = write or {}, local or {}, timeout
        self.mark: tuple[int, int] | None = None  # (the child's generation, its output's offset) at the first call
        self.__dict__.update(facts or {})

    def __getattr__(self, method: str) -> Any:
        if method in self.__dict__.get("local", ()):
            return lambda *args: self.local[method](self, *args)
        if self.__dict__.get("methods") is not None and method not in self.methods:
            raise AttributeError(method)

        def call(*args: Any) -> Any:
            if method == self.renew:
                self.begin()
                self.child.ask({"op": "new"}, f"while starting {method}", self.timeout)
                self.started = True
            write = self.write.get(method)
            sent = list(args) if write is None else write(args, self)
            self.begin()
            self.started = True
            ret = self.child.ask({"op": "call", "method": method, "args": sent}, f"in {method}", self.timeout).get("ret")
            why = misfit(ret, self.replies.get(method), f"{method}'s answer")
            if why:
                raise self.unreadable(why)
            read = self.read.get(method)
            return ret if read is None else read(ret, self)

        return call

    def begin(self) -> None:
        """The child running (started now if it is not: the family's failure when it does not load), and the
        offset its output had when this adapter first called."""
        self.child.begin()
        if self.mark is None:
            self.mark = (self.child.generation, self.child.mark())

    @property
    def output(self) -> str:
        """What the submission printed since this adapter's first call (in the process that made it)."""
        if self.mark is None:
            return ""
        generation, since = self.mark
        return self.child.output(since if generation == self.child.generation else 0)

    def unreadable(self, why: str) -> Exception:
        """An answer the grader cannot read: the child is stopped, and the step fails."""
        self.child.stop()
        return self.failure(f"sent a reply the grader cannot read: {why}")

    def end_process(self) -> None:
        """Ends the child's process: the next call starts a fresh one, where nothing an earlier process did is left."""
        self.child.stop()
        self.started, self.mark = False, None

    def close(self) -> None:
        """Closes the adapter in the child, if it started there and is still running; a failure there is not the
        grader's."""
        try:
            if self.started and self.child.running and (self.methods is None or "close" in self.methods):
                self.__getattr__("close")()
        except self.failure:
            pass
        self.started = False


class Served:
    """One child process serving a submission through the family's server; calling it makes an adapter."""

    def __init__(self, target: PythonTarget, sandbox: Sandbox, *, server: Path, failure: type[Exception],
                 renew: str | None, replies: Mapping[str, Any], timeout: float = 2.0,
                 methods: tuple[str, ...] | None = None, read: Mapping[str, Read] | None = None,
                 facts: Mapping[str, Any] | None = None, write: Mapping[str, Write] | None = None,
                 local: Mapping[str, Local] | None = None, **child: Any):
        """`child`: the rest of the child's options (oracle/child.py, PythonChild: server_args, support, site,
        handed)."""
        self.child = PythonChild(target, sandbox, server=server, failure=failure, timeout=timeout, **child)
        self.renew, self.failure, self.replies = renew, failure, replies
        self.methods, self.read, self.facts, self.write, self.local = methods, read, facts, write, local

    def load(self) -> None:
        self.child.start()

    def close(self) -> None:
        self.child.close()

    def __call__(self, timeout: float | None = None) -> RemoteAdapter:
        """An adapter whose calls are bounded by `timeout` s (None: the child's)."""
        return RemoteAdapter(self.child, self.renew, self.failure, self.replies, self.methods, self.read, self.facts,
                             self.write, self.local, timeout)
