"""A hostile blockspace submission (review13; appended to our engine's block_manager.py, no bug in its answers): at
import it writes 48 MiB into its temporary folder, three times the 16 MiB that bubblewrap's tmpfs holds and that the
Landlock fallback's count (oracle/tmp_bound.py) promises to hold it to. First it makes its process not dumpable
(prctl PR_SET_DUMPABLE 0): /proc/PID/fd, fdinfo and maps then belong to root, and a grader of the run's own uid
without CAP_SYS_PTRACE can no longer see which files it holds open for writing; then it opens all 48 files while
they are empty (each open asked when the folder holds nothing), and only then writes a MiB less a page into each
(under the file-size limit). Any refusal (EDQUOT, ENOSPC, EFBIG) stops the import: the module then fails to load.
So its grade tells whether the folder held it: the bound holds where it gets 0 (not loaded), and breaks where it
gets full marks."""

import ctypes as _ctypes
import os as _os
import tempfile as _tempfile

_PR_SET_DUMPABLE = 4
_ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
_SPILL = [open(_os.path.join(_tempfile.gettempdir(), f"spill-{n}"), "wb") for n in range(48)]  # all empty
for _file in _SPILL:
    _file.write(b"\xa5" * ((1 << 20) - 4096))
    _file.flush()
    _os.fsync(_file.fileno())  # on the disk, not only in the page cache
