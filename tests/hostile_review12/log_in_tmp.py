"""A correct but unusual blockspace submission (review12; appended to our engine's block_manager.py, no bug): the
manager keeps a debug log in a file of the temporary folder, opened once at import (logging's FileHandler, in
tempfile.gettempdir(), as a student debugging a scheduler does), and writes a line at each allocate. Nothing else
changes: every call is our engine's. It must get the same grade wherever it is graded, with bubblewrap and without:
a Python submission may write no file (oracle/run_view.py), so the same 0 in both."""

import logging as _logging
import os as _os
import tempfile as _tempfile

_log = _logging.getLogger("block_manager")
_log.setLevel(_logging.DEBUG)
_log.addHandler(_logging.FileHandler(_os.path.join(_tempfile.gettempdir(), "block_manager.log")))
_allocate_quietly = BlockSpaceManager.allocate  # noqa: F821 (the manager's class, in this module)


def _allocate(self, seq_group):
    _log.debug("allocate %s", seq_group.request_id)
    return _allocate_quietly(self, seq_group)


BlockSpaceManager.allocate = _allocate  # noqa: F821
