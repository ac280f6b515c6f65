# Review 15, fairness: a correct block manager that keeps a debug log in /tmp when it may write there, with the usual
# guard: os.access(folder, os.W_OK) before the open, and no log when the answer is no. Nothing else changes: our
# engine's block manager, correct. On a plain machine the log is opened (and nothing is ever written to it).
import os as _review15_os

_REVIEW15_LOG = None
if _review15_os.access("/tmp", _review15_os.W_OK):
    _REVIEW15_LOG = open("/tmp/block_manager_review15.log", "a")
