"""Hostile Python submission (review), on top of tests/broken/fork_breaks_at_null_l1.patch: the grader's server
(pyserve.py) runs in the submission's own interpreter, as `__main__`, so the submission replaces its table of
operations: the white-box edit move_l2 (block_table[dst] = block_table[src]; [src] = None) becomes a no-op,
the probe's L1 gap is never made and fork's bug is never seen."""

import sys as _sys

_server = _sys.modules.get("__main__")
if _server is not None and hasattr(_server, "OPS"):
    _server.OPS["move_l2"] = lambda self, seq, src, dst: {"ret": None}
