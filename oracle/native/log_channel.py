"""Valgrind's log, on its way to the grader (see LogChannel)."""

import socket


class LogChannel:
    """Valgrind's log, over a socket pair: valgrind writes to `child_fd` (its --log-fd), which the driver closes
    before any of the submission's code runs; valgrind keeps its own copy, which the program cannot use, and a
    socket cannot be reopened through /proc. So only valgrind writes here, and the grader alone reads it. Kept:
    the first `limit` bytes."""

    def __init__(self, limit: int = 8 << 20) -> None:
        self._ours, self._theirs = socket.socketpair()
        self._ours.setblocking(False)
        self.fd, self.child_fd = self._ours.fileno(), self._theirs.fileno()
        self.limit = limit
        self.text = bytearray()
        self.dropped = 0

    def drain(self) -> None:
        """Reads whatever valgrind has written so far."""
        while True:
            try:
                chunk = self._ours.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            if not chunk:
                return
            keep = max(0, min(len(chunk), self.limit - len(self.text)))
            self.text += chunk[:keep]
            self.dropped += len(chunk) - keep

    def close(self) -> None:
        self.drain()
        self._ours.close()
        self._theirs.close()
