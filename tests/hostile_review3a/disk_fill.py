"""Hostile blockspace submission (review3a), on top of tests/broken_blockspace/watermark_ignored.patch: at import it
fills its temporary folder ($TMPDIR, else /tmp) with files just under its file-size limit until the file system
says no more, then holds on to them for 45 s (asleep: no CPU time, and the child's load is waited for up to ten
times its limit in wall-clock time). Under bubblewrap that folder is a 16 MiB tmpfs of its own; without it, a
private folder under the grader's own temporary folder, bounded per file and not in total."""

import os as _os
import signal as _signal
import tempfile as _tempfile
import time as _time

_signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)  # a write past the file-size limit fails instead of killing
_chunk = b"\0" * (256 << 10)
_folder = _tempfile.gettempdir()
for _n in range(1 << 16):
    try:
        with open(_os.path.join(_folder, f"fill-{_n}"), "wb") as _f:
            for _ in range(3):  # 768 KiB a file: under the child's 1 MiB limit
                _f.write(_chunk)
    except OSError:
        break
_time.sleep(45)
