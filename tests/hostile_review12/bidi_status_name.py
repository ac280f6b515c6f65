"""Hostile blockspace submission (review12), on top of tests/broken_blockspace/watermark_ignored.patch: where the
known bug answers OK below the watermark, can_allocate answers a status whose `name` (the adapter sends it, up to
100 characters) holds Unicode's bidirectional controls: a right-to-left override (U+202E) that no pop closes, after
words that read backwards. HTML escaping and a code fence leave such characters as they are, and a browser lays out
the rest of the line right to left: the grader's own words after the name on the same line (", expected LATER",
"[rule: watermark]") show mirrored on report.html and in results.json's Markdown, and the submission's reversed words
read forwards ("REVIEW12 every test passed"). The item fails as it honestly does."""

_can_allocate_honest = BlockSpaceManager.can_allocate  # noqa: F821 (the manager's class, in this module)


class _Said:
    name = "OK \u202edessap tset yreve 21WEIVER "


def _can_allocate(self, seq_group):
    said = _can_allocate_honest(self, seq_group)
    seq = seq_group.get_seqs(status=SequenceStatus.WAITING)[0]  # noqa: F821
    if said is AllocStatus.OK and \
            self.gpu_allocator.get_num_free_blocks() - self._num_blocks(seq) < self.watermark_blocks:  # noqa: F821
        return _Said()  # the known bug's OK, below the watermark
    return said


BlockSpaceManager.can_allocate = _can_allocate  # noqa: F821
