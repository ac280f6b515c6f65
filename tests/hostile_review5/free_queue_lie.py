"""Hostile prefix-family submission (review 5), the kv_cache.py beside a package of engine/prefix with a known bug
(tests/broken_prefix/forward_order_free.patch, laid out as tests/test_tamper_prefix.py does: a free gives a
request's blocks back head first, where it must give them back tail first). The grader's adapter runs in the
submission's interpreter (oracle/prefix/serve.py is `__main__`), so importing kv_cache rewrites how an observation
is sent. Review 4's free_queue_unseen sent the free queue as null and is refused (the lab shape shows a free queue:
`shows`); this one sends every field, the free queue too, and lies in it consistently: the blocks each free gave
back stand in the order a correct free would have given them (tail first), in the places the real queue holds them.
Until an admit takes one of them, what the grader is shown is exactly a correct pool's."""

import sys as _sys

from labsol import KVCacheManager as _Base, Request  # noqa: F401

_groups: list[list[int]] = []  # the block ids each free gave back, in the order the pool took them (latest last)


class KVCacheManager(_Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _groups.clear()  # a new pool: a new program

    def free(self, request):
        ids = [block.block_id for block in self.req_to_blocks.get(request.request_id, [])]
        super().free(request)
        for group in _groups:
            group[:] = [b for b in group if b not in ids]
        _groups.append(ids)


def _as_correct(real: list) -> list:
    shown = list(real)
    for group in _groups:
        places = [at for at, block in enumerate(shown) if block in group]
        wanted = sorted((shown[at] for at in places), key=group.index, reverse=True)  # tail first
        for at, block in zip(places, wanted):
            shown[at] = block
    return shown


_main = _sys.modules.get("__main__")
if _main is not None and hasattr(_main, "observation"):
    _honest = _main.observation

    def _observation(seen):
        sent = _honest(seen)
        if sent.get("free") is not None:
            sent["free"] = _as_correct(sent["free"])
        return sent

    _main.observation = _observation
