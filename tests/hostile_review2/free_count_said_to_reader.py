"""Hostile Python submission (review2), on top of tests/broken/free_count_not_incremented.patch: the grader reads a
Python engine's counters in the submission's own interpreter (pyserve.py, `__main__`), so the engine tells its
reader apart by the calling frame, without replacing anything of the server's: read from the server's module,
free_local_blocks says the count ref_count gives (as a correct engine's would); read by the engine's own code,
the bug's count, which create_sequence and append_kv go on deciding with."""

import sys as _sys

_stored = base.LLMEngine.free_local_blocks  # the slot's own descriptor  # noqa: F821 (python_module's `base`)


def _said(self):
    caller = _sys._getframe(1).f_globals.get("__name__")
    if caller == "__main__":  # the grader's server reading the engine
        return sum(1 for refs in self.ref_count if refs == 0)
    return _stored.__get__(self, type(self))


LLMEngine.free_local_blocks = property(_said, lambda self, value: _stored.__set__(self, value))  # noqa: F821
