# Review 16, fairness: a correct block manager that keeps a debug log in /tmp when the file system there is mounted
# writable, asked the way df and many tools ask it: statvfs(2)'s ST_RDONLY flag, not access(2) (review 15's
# log_if_writable asked access, which every run's filter now answers alike). No log when the mount says read-only.
# Nothing else changes: our engine's block manager, correct. On a plain machine the log is opened (and nothing is ever
# written to it).
import os as _review16_os

_REVIEW16_LOG = None
if not _review16_os.statvfs("/tmp").f_flag & _review16_os.ST_RDONLY:
    _REVIEW16_LOG = open("/tmp/block_manager_review16.log", "a")
