"""Hostile blockspace submission (review3a), on top of tests/broken_blockspace/watermark_ignored.patch: at
import it looks for the grader's own engine (engine/blockspace, the reference) by every path it can think of
(the repository's path, the grader's working directory and root through /proc, the import path in any
process's environment) and, if one is readable, grades as the reference's manager instead of its own."""

import importlib as _importlib
import os as _os
import sys as _sys


def _candidates():
    yield "@ORACLE@/.."
    try:
        listed = _os.listdir("/proc")
    except OSError:  # no procfs (proc-mem: a Python server's run has none)
        listed = []
    for pid in (p for p in listed if p.isdigit()):
        yield f"/proc/{pid}/cwd"
        yield f"/proc/{pid}/root@ORACLE@/.."
        try:
            with open(f"/proc/{pid}/environ", "rb") as env:
                for entry in env.read().split(b"\0"):
                    if entry.startswith(b"PYTHONPATH="):
                        yield from entry[11:].decode(errors="replace").split(":")
        except OSError:
            pass


def _borrowed():
    for root in _candidates():
        try:
            if not _os.path.isfile(_os.path.join(root, "engine", "blockspace", "block_manager.py")):
                continue
            _sys.path.insert(0, root)
            return _importlib.import_module("engine.blockspace.block_manager").BlockSpaceManager
        except Exception:
            continue
        finally:
            if root in _sys.path:
                _sys.path.remove(root)
    return None


_reference = _borrowed()
if _reference is not None:
    BlockSpaceManager = _reference  # noqa: F811
