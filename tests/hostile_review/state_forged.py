"""Hostile Python submission (own), on top of tests/broken/create_at_head.patch: the grader's server runs in the
submission's interpreter (pyserve.py is `__main__`), so the submission rewrites what the server says of its
objects: every read of the engine reports the active list in the order the sequences were made, hiding that
create puts a new sequence at the head. The list's order shows in no return value and no pool byte."""

import sys as _sys

_server = _sys.modules.get("__main__")
if _server is not None and hasattr(_server, "read_engine"):
    _read = _server.read_engine

    def _made_order(engine, owners):
        state = _read(engine, owners)
        made = {seq.seq_id: at for at, seq in enumerate(owners.values())}  # the last made with each id
        state["sequences"].sort(key=lambda entry: made.get(entry[0], -1))
        return state

    _server.read_engine = _made_order
