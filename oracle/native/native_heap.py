"""The heap's facts natively, as the grader observes them for one run of the driver: from the ledger, every
mapping call answered by the grader (ledger.py, heap_notify.py), or, where the driver could hand over no
listener, from the driver's mappings read after each call (heap_maps.py). Natively every block is the fence's (one
it cannot hold fails: driver.c), so the grader sees them all; the driver's own counts, the process's word, are taken
only where larger: they can never hide a block the grader saw."""

from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

from oracle.native.heap_maps import HeapMaps, MapsReader
from oracle.native.heap_notify import Listener
from oracle.native.outside import driver_pid


@dataclass(frozen=True, slots=True)
class HeapFacts:
    """One call's heap facts: its allocations and frees, whether the grader failed one, the live blocks and
    bytes after it, and the pages stray accesses have touched in the run so far."""

    allocations: int
    frees: int
    injected: bool
    live_blocks: int
    live_bytes: int
    faulted: int = 0
    asked: int = 0  # the call's requests for a fresh block the grader's ledger answered (0 without a ledger)


class NativeHeap:
    def __init__(self, run: Popen, program: Path, listener: Listener | None):
        self.run, self.program = run, program  # the process the grader started, and the driver program it runs:
        # the driver is the one process under it running that program (outside.driver_pid), never asked
        self.listener = listener
        self._maps: MapsReader | None = None

    def call_started(self, fail_at: int) -> None:
        if self.listener is not None:
            self.listener.ledger.call_started(fail_at)

    def judged(self, said: HeapFacts, live_before: int) -> HeapFacts | None:
        """The call's facts, from what the driver `said` and what the grader saw; None when the driver is gone
        before the grader could look (its mappings read after it replied)."""
        if self.listener is not None:
            ledger = self.listener.ledger
            return HeapFacts(max(said.allocations, ledger.grants), max(said.frees, ledger.frees), ledger.injected,
                             max(said.live_blocks, ledger.live_blocks), max(said.live_bytes, ledger.live_bytes),
                             ledger.strays, ledger.asked)
        if (seen := self._mappings()) is None:
            return None
        allocations = max(said.allocations, seen.blocks - live_before)  # a count written down cannot hide a block
        return HeapFacts(allocations, said.frees, said.injected, max(said.live_blocks, seen.blocks),
                         max(said.live_bytes, seen.bytes), seen.faulted)

    def faulted(self) -> int | None:
        """The pages stray accesses have touched in the run so far, by the grader's count alone (a probe operation's
        reply says nothing of the heap); None when the driver is gone before the grader could look."""
        if self.listener is not None:
            return self.listener.ledger.strays
        seen = self._mappings()
        return None if seen is None else seen.faulted

    def _mappings(self) -> HeapMaps | None:
        """Without a listener: the fence's mappings, read now."""
        if self._maps is None and (pid := driver_pid(self.run, self.program)[0]) is not None:
            try:
                self._maps = MapsReader(pid)
            except OSError:
                pass
        return self._maps.heap() if self._maps is not None else None

    def close(self) -> None:
        if self._maps is not None:
            self._maps.close()
            self._maps = None
        if self.listener is not None:  # the driver's mapping calls fail from now on (ENOSYS)
            self.listener.close()
            self.listener = None
