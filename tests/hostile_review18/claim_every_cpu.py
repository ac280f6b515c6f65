# Review 18, hostile: a block manager that, at import, takes every CPU claim of the grader's (oracle/one_cpu.py: an
# exclusive flock on a file per CPU in $TMPDIR/pagedcheck-cpus-<uid>/) and holds them for as long as it is loaded,
# so that every other grade started meanwhile finds each CPU claimed and runs unpinned (review 17 measured such
# grades two to three times slower); it also unpins itself (its own affinity: allowed). The grader's $TMPDIR is
# filled in (@TMPDIR@), /tmp tried too. Where it reaches any claim file, or can make the claims folder itself (a
# folder of its own there would be refused by claims_folder, and no grade would claim a CPU), it says so by not
# loading: the grade then falls to 0. Nothing else changes: our engine's block manager, correct.
import fcntl as _review18_fcntl
import os as _review18_os

_REVIEW18_HELD = []
_REVIEW18_REACHED = []
for _review18_tmp in ("@TMPDIR@", "/tmp"):
    try:
        _review18_names = [n for n in _review18_os.listdir(_review18_tmp) if n.startswith("pagedcheck-cpus-")]
    except OSError:
        _review18_names = []
    for _review18_name in {*_review18_names, "pagedcheck-cpus-0", f"pagedcheck-cpus-{_review18_os.getuid()}"}:
        _review18_folder = _review18_os.path.join(_review18_tmp, _review18_name)
        try:
            _review18_os.mkdir(_review18_folder, 0o777)
            _REVIEW18_REACHED.append(_review18_folder)
        except OSError:
            pass
        for _review18_cpu in range(_review18_os.cpu_count() or 1):
            _review18_path = _review18_os.path.join(_review18_folder, f"cpu{_review18_cpu}")
            try:
                _review18_fd = _review18_os.open(_review18_path, _review18_os.O_RDONLY)
            except OSError:
                continue
            _REVIEW18_REACHED.append(_review18_path)
            try:
                _review18_fcntl.flock(_review18_fd, _review18_fcntl.LOCK_EX | _review18_fcntl.LOCK_NB)
                _REVIEW18_HELD.append(_review18_fd)
            except OSError:
                _review18_os.close(_review18_fd)
try:
    _review18_os.sched_setaffinity(0, range(_review18_os.cpu_count() or 1))
except OSError:
    pass
if _REVIEW18_REACHED:
    raise RuntimeError(f"review 18: reached the grader's CPU claims: {_REVIEW18_REACHED}")
