"""The CPU time a run has used, read by the grader from /proc (never from the run): what a time limit judges,
so that a busy machine, which delays a program without its doing, changes no verdict.

A call's limit is CPU seconds of the run's processes (its whole process tree: the supervisor, the program, a
valgrind around it), with a cap on the wall clock of HUNG_WALL times the limit for a program that waits
without computing (blocked on a pipe, asleep), which is hung too. The cap counts only the run's own time: the time
the run waited on the grader (natively, each mapping call waits for the ledger's answer) is added to it, so how
fast the grader answers, or how loaded its machine is, decides no verdict.

Natively the fence's own mapping calls (oracle/native/ledger.py `fence_calls`: each grant of a block the ledger made,
each free of one and the quarantine's later unmap of it) are its work in the kernel, not the program's: each adds
MAPPING_CALL_CPU to the limit of the run's user and system CPU together, never to its user CPU, which the limit alone
holds (`cpu_left`): the allowance pays for the fence's kernel work, and buys no computing. A mapping call the program
makes itself (an advice, an unmap, a protection of a page nobody maps), answered or refused, earns nothing: it is the
program's, and review 16's system_time_bought bought 0.67 s of its own system CPU with 40,000 of them. A whole grade's
time limit counts the CPU of the grader's whole process tree, the grader's own included (Budget)."""

import os
import time
from typing import NamedTuple

HUNG_WALL = 10  # a call gets at most this many times its limit in wall-clock time, whatever its CPU time
_TICKS = os.sysconf("SC_CLK_TCK")
MAPPING_CALL_CPU = 25e-6  # CPU seconds each of the fence's own mapping calls adds to its call's limit (a block's
# grant, its free, the quarantine's unmap of it: ledger.py `fence_calls`, about 5 us of the kernel's natively, 15 us
# under the listener, measured), which a C library's malloc does not make the program spend


class Cpu(NamedTuple):
    """CPU seconds of a process tree: in user mode, in the kernel."""

    user: float
    system: float

    def since(self, earlier: "Cpu") -> "Cpu":
        return Cpu(self.user - earlier.user, self.system - earlier.system)


def allowed(limit: float, fence_calls: int) -> float:
    """A limit of `limit` CPU seconds with the fence's allowance for `fence_calls` of its own mapping calls: what
    user and system CPU together may reach (and what a wall-clock cap is HUNG_WALL times)."""
    return limit + fence_calls * MAPPING_CALL_CPU


def cpu_left(limit: float, fence_calls: int, used: Cpu) -> float:
    """The CPU seconds left of a limit of `limit` after `used`, with `fence_calls` of the fence's own mapping calls
    made meanwhile (negative: past it): the user CPU is held to `limit` alone, user and system together to `limit`
    and the allowance. The one rule for a call's limit, a probe's and a fuzz's safety net."""
    return min(limit - used.user, allowed(limit, fence_calls) - used.user - used.system)


class _Answered:
    """The fence's own mapping calls this process has answered for its runs (ledger.py `fence_calls`, every
    listener's together: heap_notify.Listener adds each run's): a count, what a safety net allows the fence's kernel
    work by. A mapping call of the program's own adds nothing."""

    total = 0


ANSWERED = _Answered()


def children(pid: int) -> list[int]:
    """The pids of process `pid`'s children (every thread's), as /proc lists them now."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                found += [int(child) for child in listed.read().split()]
    except OSError:
        pass
    return found


class RunClock:
    """The CPU seconds of one run's process tree, read cheaply on every call: each process's /proc/PID/stat is
    kept open (one pread each), and the tree is walked again for processes started since when asked. It times
    the run's current call: `call_started()` when a request goes out, `owed(limit)` when its limit has passed."""

    def __init__(self, root: int, own: bool = True):
        self.root = root
        self.own = own  # count the root's own CPU (else only its children's, reaped or not: a safety net's)
        self._stats: dict[int, int] = {}  # pid -> its /proc/PID/stat, open
        self._call = (time.monotonic(), Cpu(0.0, 0.0))  # when the current call started: wall clock, the run's CPU

    def call_started(self) -> None:
        self._call = (time.monotonic(), self.times())

    def owed(self, limit: float, excused: float = 0.0, fence_calls: int = 0) -> float:
        """How much longer to wait for the current call past `limit`: the CPU seconds of it the run has not used
        yet (`cpu_left`, with the allowance of the fence's `fence_calls` answered in it), within HUNG_WALL
        times the limit and the allowance of wall-clock time since the call started, not counting the `excused`
        seconds of it the run spent waiting on the grader (its answers to the run's mapping calls)."""
        wall, cpu = self._call
        unused = cpu_left(limit, fence_calls, self.times(walk=True).since(cpu))
        return max(0.0, min(unused, wall + HUNG_WALL * allowed(limit, fence_calls) + excused - time.monotonic()))

    def seconds(self, walk: bool = False) -> float:
        """User and system CPU seconds of the tree together (`times`)."""
        return sum(self.times(walk))

    def times(self, walk: bool = False) -> Cpu:
        """User and system CPU seconds of the tree, those of reaped children included (utime and cutime, stime and
        cstime); `walk`: look for processes started since the last walk first."""
        if walk or not self._stats:
            self._walk()
        user = system = 0
        for pid, fd in list(self._stats.items()):
            try:
                fields = os.pread(fd, 4096, 0).rsplit(b")", 1)[1].split()
                ticks = [int(fields[index]) for index in (11, 12, 13, 14)]  # utime stime cutime cstime
            except (OSError, IndexError, ValueError):  # ended: its time is in its parent's cutime now
                os.close(self._stats.pop(pid))  # (a tree that starts processes all along keeps no file of each)
                continue
            if pid == self.root and not self.own:
                ticks[0] = ticks[1] = 0
            user, system = user + ticks[0] + ticks[2], system + ticks[1] + ticks[3]
        return Cpu(user / _TICKS, system / _TICKS)

    def _walk(self) -> None:
        todo, seen = [self.root], set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            if pid not in self._stats:
                try:
                    self._stats[pid] = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    continue
            todo += children(pid)

    def close(self) -> None:
        for fd in self._stats.values():
            os.close(fd)
        self._stats.clear()


class Budget:
    """A time limit on work of this process: `seconds` CPU seconds of its whole tree from now (the grader and every
    run it started, which do the work), so a busy machine, which delays the work without adding to it, never
    reaches it; with a cap of HUNG_WALL times `seconds` of wall clock for work that waits without computing. The
    whole grade's time limit (--time-limit: the grade's budget) and a fuzz's or shrink's safety net (SafetyNet).

    `passed()` reads the tree (a walk of /proc, some 0.4 ms of CPU: asked once per item, program or replay);
    `left()`, asked before each wait of a call, reads it only when the last reading no longer shows the time left,
    the tree having possibly used every core since; a wait it cut short asks it again."""

    def __init__(self, seconds: float):
        self.limit = seconds
        self.clock = RunClock(os.getpid())
        self.wall, self.cpu = time.monotonic(), self.clock.seconds(walk=True)
        self._used, self._read_at = 0.0, self.wall  # CPU seconds used at the last reading, and when it was
        self._cores = os.cpu_count() or 1  # the most CPU seconds the tree can use in a second of wall clock

    def used(self) -> float:
        """CPU seconds the tree has used since the start, read now (never less than an earlier reading: a process
        that ended unreaped by the tree takes its time along)."""
        self._used = max(self._used, self.clock.seconds(walk=True) - self.cpu)
        self._read_at = time.monotonic()
        return self._used

    def passed(self) -> bool:
        """Whether the limit has passed: its CPU seconds, or the wall-clock cap."""
        return self.used() > self.limit or time.monotonic() - self.wall > HUNG_WALL * self.limit

    def left(self) -> float:
        """How long one may wait, in wall-clock seconds, before the limit may have passed; 0 when it has."""
        now = time.monotonic()
        wall = self.wall + HUNG_WALL * self.limit - now
        if wall <= 0:
            return 0.0
        cpu = self._read_at + (self.limit - self._used) / self._cores - now
        if cpu <= 0:  # the last reading's time may be spent: read again
            unused = self.limit - self.used()
            if unused < 0:
                return 0.0
            cpu = max(unused / self._cores, 1 / _TICKS)  # no finer than the clock's tick
        return min(wall, cpu)

    def close(self) -> None:
        self.clock.close()

    def __enter__(self) -> "Budget":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SafetyNet:
    """A time limit on work whose budgets are counts (a fuzz's programs, a shrink's replays), there only to stop
    one that would never end: `seconds` CPU seconds, from now, of the runs this process started (its children,
    running or reaped, and theirs: they do the submission's work, a Python pool's server as a C driver), by the same
    rule as a call's limit (`cpu_left`): the runs' user CPU held to `seconds`, their user and system CPU together to
    `seconds` and MAPPING_CALL_CPU for each of the fence's own mapping calls this process answered meanwhile
    (ANSWERED: a count, the fence's work in the kernel; a mapping call of the program's own adds nothing). The grader's own process is not counted: its work (answering those calls, checking
    replies) is bounded by the fuzz's counts (programs, calls, replays; a call's count of mapping calls), and a
    slower grader must not stop sooner. A busy machine, which delays the work without adding to it, never reaches
    it; a cap of HUNG_WALL times the limit with the allowance of wall clock stops work that waits without computing
    (a submission that sleeps in every call within its call's limit)."""

    def __init__(self, seconds: float):
        self.limit = seconds
        self.clock = RunClock(os.getpid(), own=False)
        self.wall, self.cpu, self.answered = time.monotonic(), self.clock.times(walk=True), ANSWERED.total

    def passed(self) -> bool:
        """Whether the limit has passed (a walk of the tree: called once per program or replay, not per call)."""
        calls = ANSWERED.total - self.answered
        return (cpu_left(self.limit, calls, self.clock.times(walk=True).since(self.cpu)) < 0
                or time.monotonic() - self.wall > HUNG_WALL * allowed(self.limit, calls))

    def close(self) -> None:
        self.clock.close()
