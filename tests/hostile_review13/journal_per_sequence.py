"""A correct but unusual blockspace submission (review13; appended to our engine's block_manager.py, no bug): the
manager journals each sequence's block tables to a temporary file of that sequence's own (tempfile's TemporaryFile:
an unnamed file of the temporary folder, a few bytes each), opened when the sequence first gets a table (allocate,
fork), written at each change, and kept for the manager's life (closed when the manager goes), so that a crash's
post-mortem reads every sequence's history, freed or not: a student's crash log per sequence. Nothing else
changes: every answer is our engine's. It must get the same grade wherever it is graded, with bubblewrap and without:
a Python submission may write no file (oracle/run_view.py), so the same 0 in both."""

import tempfile as _tempfile

_allocate_plainly = BlockSpaceManager.allocate  # noqa: F821 (the manager's class, in this module)
_fork_plainly = BlockSpaceManager.fork  # noqa: F821
_free_plainly = BlockSpaceManager.free  # noqa: F821


def _journals(self):
    """seq_id -> its journal (the manager's own: closed when the manager goes)."""
    return self.__dict__.setdefault("_journals", {})


def _journal(self, seq_id):
    journal = _journals(self).get(seq_id)
    if journal is None:
        journal = _journals(self)[seq_id] = _tempfile.TemporaryFile("w+")
    journal.write(f"{[block.block_id for block in self.block_tables.get(seq_id, [])]}\n")
    journal.flush()


def _allocate(self, seq_group):
    _allocate_plainly(self, seq_group)
    for seq in seq_group.get_seqs():
        if seq.seq_id in self.block_tables:
            _journal(self, seq.seq_id)


def _fork(self, parent_seq, child_seq):
    _fork_plainly(self, parent_seq, child_seq)
    _journal(self, child_seq.seq_id)


def _free(self, seq):
    _free_plainly(self, seq)
    if seq.seq_id in _journals(self):
        _journal(self, seq.seq_id)  # its last line: the empty table


BlockSpaceManager.allocate = _allocate  # noqa: F821
BlockSpaceManager.fork = _fork  # noqa: F821
BlockSpaceManager.free = _free  # noqa: F821
