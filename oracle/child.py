"""The process that runs a Python submission, for every family: the family's server script under the system
Python, in the sandbox.

The grader copies the server with oracle/serve.py (the loop every family's server shares), and the
submission's files (found without running them), into read-only areas of the sandbox, and talks to the
server over two dedicated pipes; what the submission prints goes to a capped file, which each process is handed
new with the family's files (oracle/handed.py). It may write no file under either isolation: no temporary
folder, nothing writable (oracle/run_view.py). A message of its names no path of the grader's (oracle/run_view.py `spelled`: /tmp,
/usr, `.` for its own folder). A reply is read within the
call's limit, refused when its length is over MAX_REPLY before any of it is read, and decoded by oracle/reply.py
(strict, bounded, plain data only); a failure the server reports, a process that ends, a hang or
a reply that is not the protocol's each raise the family's ImplementationFailure with a label, and a process
that cannot go on is stopped with everything it started (the next request starts a new one).
"""

import dataclasses
import json
import os
import select
import shutil
import struct
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle.handed import Handed, Renewable
from oracle.reply import Unreadable, decode
from oracle.run_cpu import RunClock
from oracle.run_view import spelled
from oracle.runtime import PYTHON
from oracle.run_limits import signal_label
from oracle.sandbox import DeadlinePassed, Limits, Sandbox, environment
from oracle.site import VARIABLE, missing_module_hint

ORACLE = Path(__file__).resolve().parent
MAX_LABEL = 2000  # characters of a load error the server words
MAX_REPLY = 16 << 20  # bytes in one reply (a 64 MiB pool's ref_count is 2 to 8 MiB of JSON)
_LENGTH = struct.Struct("<I")


@dataclass(frozen=True)
class PythonTarget:
    """Where a Python submission is, found without running it: `module` (a dotted name, or a .py file's name)
    is imported from a copy of `files` (paths relative to `root`) first on sys.path; `attr` names the object
    with the six calls, if any."""

    spec: str  # as the user gave it
    root: Path
    module: str
    attr: str = ""
    files: tuple[str, ...] = ()


class LoadFailure(Exception):
    """The submission does not load (a SyntaxError, an ImportError, a missing call, ...): its fault."""


def ended(status: int | None) -> str:
    """How a server that stopped answering ended, in words."""
    if status is None:
        return "stopped answering and did not exit"
    if status < 0:
        return signal_label(-status)
    return f"ended the process (exit status {status})"


def server_area(sandbox: Sandbox, server: Path) -> Path:
    """A read-only folder holding `oracle/` with the family's server (a file under oracle/) and oracle/serve.py,
    at their places in the package (empty __init__.py files), and nothing else of pagedcheck."""
    area = sandbox.area("server")
    for path in (ORACLE / "serve.py", server.resolve()):
        copy = area / "oracle" / path.relative_to(ORACLE)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
        for package in copy.relative_to(area).parents[:-1]:
            (area / package / "__init__.py").touch()
    for path in [area, *area.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return area


class PythonChild:
    """One server process for a submission, started lazily and again after a failure that stopped it.

    `generation` counts the starts (a handle lives as long as its generation); `output(since)` is what the
    submission printed in this generation from offset `since` on; `mark()` is the offset now.
    """

    def __init__(
        self,
        target: PythonTarget,
        sandbox: Sandbox,
        *,
        server: Path,
        failure: type[Exception],
        timeout: float = 2.0,
        load_timeout: float = 10.0,
        output_limit: int = 1 << 20,
        limits: Limits = Limits(cpu_seconds=120),
        server_args: tuple[str, ...] = (),
        support: Path | None = None,
        handed: Sequence[Renewable] = (),
        site: Path | None = None,
    ):
        """`server` is the family's server script (a file under oracle/: it takes REQUESTS_FD REPLIES_FD ROOT
        MODULE [ATTR], then `server_args`); `failure`, the family's ImplementationFailure, raised for each way
        of not answering; `support`, a directory it may read besides the submission's files; `handed`, the
        family's files every start of the server is handed, each renewed for it (oracle/handed.py); `site`, a
        folder of packages the submission needs (oracle/site.py, checked), read-only and last on its sys.path."""
        self.target = target
        self.sandbox = sandbox
        self.failure = failure
        self.timeout = timeout
        self.load_timeout = load_timeout
        self.output_limit = output_limit
        self.limits = dataclasses.replace(limits, file_bytes=output_limit)
        self.generation = 0
        self._proc: subprocess.Popen | None = None
        self._cmd = self._reply = -1
        self._words: dict[str, str] = {}  # the grader's paths its messages may name, and how each is spelled
        self.handed = Handed(output_limit, handed)  # its output file and `handed`, new for each start
        self._area = server_area(sandbox, server)
        self._server = self._area / "oracle" / server.resolve().relative_to(ORACLE)
        self._server_args = server_args
        self._support = (support,) if support is not None else ()
        self.site = site
        self._files = sandbox.area("submission")
        for name in target.files:
            (self._files / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(target.root / name, self._files / name)
        for path in [self._files, *self._files.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)

    @property
    def running(self) -> bool:
        return self._proc is not None

    def start(self) -> None:
        """Starts the server and waits for it to load the submission; LoadFailure when it does not."""
        self.stop()
        handed = self.handed
        handed.renew()  # before the process exists: nothing an earlier one left in its files reaches it
        cmd_r, cmd_w = os.pipe()
        reply_r, reply_w = os.pipe()
        target = self.target
        argv = [PYTHON, "-I", "-B", str(self._server), str(cmd_r), str(reply_w), str(self._files), target.module]
        argv += [target.attr, *self._server_args] if self._server_args else [target.attr] if target.attr else []
        try:
            self._proc = self.sandbox.popen(
                argv,
                readable=(self._area, self._files, *self._support, *([self.site] if self.site else [])),
                cwd=self._files,
                env=environment(**({VARIABLE: str(self.site)} if self.site else {})),
                limits=self.limits,
                pass_fds=(cmd_r, reply_w, *handed.fds),
                stdout=handed.output,
                stderr=handed.output,
                private_tmp=False,  # no writable folder under either isolation (oracle/run_view.py)
                frozen=True,  # the frozen runtime's programs and libraries alone, under either isolation
                procfs=False,  # no /proc, so no process's memory file (oracle/run_view.py PROCFS)
            )
            self._words = {**self.sandbox.spellings(self._proc), str(self._files): "."}
        finally:
            os.close(cmd_r)
            os.close(reply_w)
        os.set_blocking(cmd_w, False)
        self._cmd, self._reply = cmd_w, reply_r
        self.generation += 1
        self._clock = RunClock(self._proc.pid)  # the run's CPU seconds: what a call's time limit judges (loading first)
        try:
            hello = self._receive(self.load_timeout, "while loading")
        except self.failure as failure:
            raise LoadFailure(str(failure)) from None
        if hello.get("loaded") is not True:
            reason = hello.get("load_error")
            self.stop()
            if type(reason) is not str:
                raise LoadFailure("the server sent no load result")
            reason = spelled(reason, self._words)[:MAX_LABEL]
            raise LoadFailure(reason + missing_module_hint(reason, self.site))

    def stop(self, grace: float = 0.0) -> int | None:
        """Ends the server and everything it started, after letting it exit by itself for up to `grace` s;
        its exit status (None if it was not running)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        os.close(self._cmd)
        os.close(self._reply)
        self._cmd = self._reply = -1
        self._clock.close()
        return self.sandbox.stop(proc, grace)

    def close(self) -> None:
        self.stop()
        self.handed.close()

    def mark(self) -> int:
        return self.handed.mark()

    def output(self, since: int = 0) -> str:
        return self.handed.printed(since)

    # ---- one request, one reply ----

    def ask(self, request: dict[str, Any], doing: str, timeout: float | None = None) -> dict[str, Any]:
        """Sends a request and returns its reply; the family's ImplementationFailure when the submission failed (the
        server is stopped when it cannot go on). `doing` ends a label: "in llm_init"."""
        self.begin()
        timeout = self.timeout if timeout is None else timeout
        body = json.dumps(request, separators=(",", ":")).encode()
        self._clock.call_started()
        self._send(_LENGTH.pack(len(body)) + body, time.monotonic() + timeout, doing)
        reply = self._receive(timeout, doing)
        if "failure" in reply:
            label = reply["failure"]
            if type(label) is not str:
                raise self._fail("sent a reply the grader cannot read (failure is not a string)")
            if reply.get("fatal") is not False:
                self.stop()
            raise self.failure(spelled(label, self._words)[:500])
        return reply

    def begin(self) -> None:
        """The server running: started now if it is not (the family's failure when the submission does not load)."""
        if self._proc is None:
            try:
                self.start()
            except LoadFailure as failure:
                raise self.failure(f"does not load: {failure}") from None

    def _fail(self, label: str) -> Exception:
        self.stop()
        return self.failure(label)

    def _send(self, data: bytes, deadline: float, doing: str) -> None:
        view = memoryview(data)
        while view:
            if not select.select([], [self._cmd], [], max(0.0, deadline - time.monotonic()))[1]:
                raise self._fail(f"hung: no answer within {self.timeout:g} s")
            try:
                view = view[os.write(self._cmd, view) :]
            except BrokenPipeError:
                raise self._fail(f"{ended(self._stop_after_end())} {doing}") from None

    def _receive(self, timeout: float, doing: str) -> dict[str, Any]:
        end = time.monotonic() + timeout  # the call's, however its reply trickles in (and its CPU, owed, past it)
        (length,) = _LENGTH.unpack(self._read(_LENGTH.size, end, timeout, doing))
        if length > MAX_REPLY:
            raise self._fail(f"sent a reply of {length} bytes, over the {MAX_REPLY >> 20} MiB limit")
        body = self._read(length, end, timeout, doing)
        try:
            reply = decode(body)
        except Unreadable as why:
            raise self._fail(f"sent a reply the grader cannot read ({why})") from None
        if type(reply) is not dict:
            raise self._fail("sent a reply the grader cannot read (not an object)")
        return reply

    def _read(self, n: int, end: float, timeout: float, doing: str) -> bytes:
        chunks, have = [], 0
        while have < n:
            left = max(0.0, end - time.monotonic())
            try:
                wait = self.sandbox.wait_limit(left)  # less when the grade's time limit may come first
            except DeadlinePassed:  # the grade's time limit, not this call's: the item is not run
                self.stop()
                raise
            if not select.select([self._reply], [], [], wait)[0]:
                if wait < left:  # cut short for the grade's time limit: asked again
                    continue
                budget = self.sandbox.budget
                if budget is not None and budget.passed():  # both passed: the grade's, as above
                    self.stop()
                    raise DeadlinePassed()
                if (owed := self._clock.owed(timeout)) > 0:  # a busy machine delayed it, not its own doing
                    end = time.monotonic() + owed
                    continue
                raise self._fail(f"hung: no answer within {timeout:g} s" + (" while loading" if doing == "while loading" else ""))
            chunk = os.read(self._reply, min(n - have, 1 << 20))
            if not chunk:
                raise self._fail(f"{ended(self._stop_after_end())} {doing}")
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def _stop_after_end(self) -> int | None:
        """The reply pipe closed: the server ended (or closed it). Give it a moment to exit by itself, so its
        own status, not our kill, names how it ended."""
        return self.stop(grace=1.0)

    def __del__(self) -> None:
        if getattr(self, "_proc", None) is not None:
            self.stop()

