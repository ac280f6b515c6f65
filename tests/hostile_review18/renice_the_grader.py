# Review 18, hostile: a block manager that, at import, tries to slow the grader and every other grade of its user:
# nice 19 for its user (PRIO_USER, who 0: every process of the caller's uid) and its process group (PRIO_PGRP, who 0),
# and, naming its parent (the run's supervisor, or outside a pid namespace a chain up to the grader), nice 19, one CPU,
# a CPU-time limit of 1 s, the idle I/O class. Where any of these is done it says so by not loading: the grade then
# falls to 0. Nothing else changes: our engine's block manager, correct.
import os as _review18_os
import resource as _review18_resource

_REVIEW18_DONE = []


def _review18_try(what, call):
    try:
        call()
        _REVIEW18_DONE.append(what)
    except OSError:
        pass


_review18_parent = _review18_os.getppid()
_review18_try("setpriority(PRIO_USER, 0)", lambda: _review18_os.setpriority(_review18_os.PRIO_USER, 0, 19))
_review18_try("setpriority(PRIO_PGRP, 0)", lambda: _review18_os.setpriority(_review18_os.PRIO_PGRP, 0, 19))
_review18_try("setpriority(parent)", lambda: _review18_os.setpriority(_review18_os.PRIO_PROCESS, _review18_parent, 19))
_review18_try("sched_setaffinity(parent)", lambda: _review18_os.sched_setaffinity(_review18_parent, {0}))
_review18_try("prlimit(parent)", lambda: _review18_resource.prlimit(_review18_parent, _review18_resource.RLIMIT_CPU,
                                                                    (1, 1)))
_review18_try("sched_setscheduler(parent)", lambda: _review18_os.sched_setscheduler(
    _review18_parent, _review18_os.SCHED_IDLE, _review18_os.sched_param(0)))
if _REVIEW18_DONE:
    raise RuntimeError(f"review 18: changed another process's scheduling or limits: {_REVIEW18_DONE}")
