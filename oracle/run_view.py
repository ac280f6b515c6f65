"""What a run sees of the system besides its own paths, declared once for both isolations (issue 17, one-view): the
same data to read and the same bounded temporary folder to write, with bubblewrap and without it.

READ. Bubblewrap shows a run the host's /usr; the Landlock fallback only its frozen copy (oracle/runtime.py). Of the
data the standard library reads at run time, the time zone database is what a correct submission loads
(zoneinfo.ZoneInfo, datetime with a zone; C's localtime under TZ): `time_zones` names the one folder every run reads it
from, the host's own (the first folder of the interpreter's TZPATH that holds one) or, on a host without one, the
`tzdata` package's (a dependency of pagedcheck), so that it exists on any machine. Bubblewrap shows that folder (under
/usr it is there already, else bound read-only at its own path), the frozen copy holds a copy of it; each run's
environment names the one it reads (`zone_variables`: PYTHONTZPATH for zoneinfo, which reads it even under
`python -I`, and TZDIR for the C library). Locale data is not needed (LANG=C.UTF-8 is built into the C library), and
no run has a network, so no certificate store either.

WRITE. Every run may write its own temporary folder, bounded in total the same way in both: bubblewrap's is a tmpfs
of `Limits.tmp_bytes`; the fallback's is a folder on the grader's disk, where each file is bounded by the run's
file-size limit and the number of files by `tmp_entries` (oracle/tmp_bound.py refuses a new one past it): so its
total is at most tmp_bytes as well.

WORDS. A message to the student names no path of the grader's, and reads the same under both isolations
(`spelled`, oracle/sandbox.py `spellings`): the fallback's temporary folder is /tmp and its frozen copy /usr, as
bubblewrap shows them, a time zone database bound from elsewhere is /usr/share/zoneinfo, the submission's own folder is
`.` (its working directory) and the rest of the sandbox's folder `<sandbox>`.
"""

import os
import sysconfig
from pathlib import Path

TMP = "/tmp"  # the run's temporary folder, as every message spells it


def time_zones() -> Path | None:
    """The time zone database every run reads: the host's (a TZPATH folder holding UTC), else the tzdata package's;
    None when neither is here."""
    for folder in (sysconfig.get_config_var("TZPATH") or "").split(os.pathsep):
        if folder and os.path.isfile(os.path.join(folder, "UTC")):
            return Path(folder)
    try:
        import tzdata
    except ImportError:
        return None
    folder = Path(tzdata.__file__).parent / "zoneinfo"
    return folder if (folder / "UTC").is_file() else None


def zone_variables(folder: Path | None) -> dict[str, str]:
    """The environment that makes a run read its time zones from `folder`."""
    return {"PYTHONTZPATH": str(folder), "TZDIR": str(folder)} if folder is not None else {}


def tmp_entries(tmp_bytes: int, file_bytes: int) -> int:
    """How many files and folders a fallback's temporary folder may hold at once: each is at most `file_bytes`, so
    together at most `tmp_bytes` (at least one)."""
    return max(1, tmp_bytes // max(1, file_bytes))


def spelled(text: str, spellings: dict[str, str]) -> str:
    """`text` (a message of a run's) with each path of the grader's in `spellings` written as the word it maps to (the
    longest path first, so a folder inside another keeps its own word)."""
    for path in sorted(spellings, key=len, reverse=True):
        text = text.replace(path, spellings[path])
    return text
