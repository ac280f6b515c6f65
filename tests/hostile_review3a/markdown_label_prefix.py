"""Hostile prefix-family submission (review3a), the kv_cache.py beside a package of engine/prefix with a known bug
(tests/broken_prefix/no_hit_cap.patch, as tests/test_tamper_prefix.py lays it out): free of a request of 3 blocks or
more raises an exception whose text is Markdown of the submission's. A crash's label is quoted in the item's message,
which reaches results.json's Markdown (output_format "md") outside any code block."""

from labsol import KVCacheManager as _Base, Request  # noqa: F401


class KVCacheManager(_Base):
    def free(self, request):
        blocks = list(self.req_to_blocks.get(request.request_id, []))
        super().free(request)
        if len(blocks) >= 3:
            raise RuntimeError("freed\n\n# REVIEW3A: all tests passed\n\n![](http://127.0.0.1:@PORT@/seen.png)")
