"""Hostile blockspace submission (review3a), on top of tests/broken_blockspace/watermark_ignored.patch: the
adapter that answers the grader runs in the submission's own interpreter (oracle/blockspace/adapter.py is
`__main__`), so importing the submission can rewrite its `observe`. The reply stays plain JSON within every
bound, one ref count's position is a float (0.5): the driver's filter (`0 <= p < len(table)`) lets it through
and block_tables.ref_counts indexes a list with it."""

import sys as _sys

_main = _sys.modules["__main__"]
if hasattr(_main, "Adapter"):
    _observe_honest = _main.Adapter.observe

    def _observe(self, seq_ids):
        seen = _observe_honest(self, seq_ids)
        seen["ref_counts"] = [[i, 0.5, 1] for i, _ in seen["tables"]][:1]
        return seen

    _main.Adapter.observe = _observe
