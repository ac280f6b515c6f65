"""Hostile blockspace submission (review3a): our engine, with the known bug of
tests/broken_blockspace/watermark_ignored.patch in every other manager made (a count kept across instances, as
a class attribute shared by mistake would). Each directed item runs its programs once, on a manager of its own;
the watermark item's program gets an even-numbered manager, where the watermark is kept, and passes. The fuzz
item fails on the watermark rule (can_allocate: expected LATER, got OK) but only the fuzz item pays: its failure
names the rule and charges no item of it."""

_made = [0]
_init_honest = BlockSpaceManager.__init__  # noqa: F821 (the manager's class, in this module)


def _init(self, *args):
    _made[0] += 1
    _init_honest(self, *args)
    if _made[0] % 2 == 1:
        self.watermark_blocks = 0  # the known bug: no block kept back


BlockSpaceManager.__init__ = _init  # noqa: F821
