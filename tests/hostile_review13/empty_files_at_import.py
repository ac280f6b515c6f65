"""A blockspace submission (review13; appended to our engine's block_manager.py, no bug in its answers) that makes
@N@ empty files in its temporary folder at import (markers, a few hundred bytes of names and no data: a tmpfs or a
disk holds them at no size), then answers as our engine does. Its grade is full marks in either isolation; what it
costs is the grader's: under the Landlock fallback each file's creation waits for the grader's count of the folder
(one-view: oracle/tmp_bound.py walks the whole folder and every process's /proc for each), so the N creations cost
the grader time that grows as N squared, while the run itself spends almost none. tests/bench/tmp_folder_entries.py
measures it; no test asserts a time."""

import os as _os
import tempfile as _tempfile

for _n in range(@N@):
    open(_os.path.join(_tempfile.gettempdir(), f"marker-{_n}"), "w").close()
