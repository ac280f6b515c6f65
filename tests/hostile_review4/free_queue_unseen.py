"""Hostile prefix-family submission (review 4), the kv_cache.py beside a package of engine/prefix with a known bug
(tests/broken_prefix/forward_order_free.patch, laid out as tests/test_tamper_prefix.py does): the grader's adapter
runs in the submission's interpreter (oracle/prefix/serve.py is `__main__`), so importing kv_cache rewrites how an
observation is sent: every field the pool really has is sent as it is, but the free queue as null, the word an
adapter uses for "this pool has no free queue to show". The pool then lies consistently in the cheapest way: it
says nothing where its bug would show."""

import sys as _sys

from labsol import KVCacheManager, Request  # noqa: F401

_main = _sys.modules.get("__main__")
if _main is not None and hasattr(_main, "observation"):
    _honest = _main.observation

    def _observation(seen):
        sent = _honest(seen)
        sent["free"] = None
        return sent

    _main.observation = _observation
