"""Hostile blockspace submission (review3a), on top of tests/broken_blockspace/watermark_ignored.patch: rewrites the
served adapter's `observe` (it is `__main__` in the submission's interpreter) so that once two sequences live, the
second one's first block id is an HTML script element. The fuzz item fails on it (a block id that is no block of
the GPU) and pictures the failing call on report.html, whose table cells carry the implementation's block ids."""

import sys as _sys

_main = _sys.modules["__main__"]
if hasattr(_main, "Adapter"):
    _observe_honest = _main.Adapter.observe

    def _observe(self, seq_ids):
        seen = _observe_honest(self, seq_ids)
        if len(seen["tables"]) >= 2 and seen["tables"][1][1]:
            seen["tables"][1][1][0] = "<script>alert('REVIEW3A')</script>"
        return seen

    _main.Adapter.observe = _observe
