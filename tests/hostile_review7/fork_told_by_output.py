"""Hostile Python submission (review 7), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them). Aimed at one process of a submission alive at a time
(oracle/hw3/alone.py) and what a process finds of the one before it: every process of a grading writes what it
prints to one file of the grader's (oracle/child.py's output, truncated when a process starts, never replaced), its
standard output. Truncating empties the file; it keeps the file's extended attributes (and mode), which a process
may set when the file is its uid's: where the grader runs as the runs' own uid (a grader that is not root).

So each process keeps, in an extended attribute of its standard output, the calls it has made so far, and reads at
import what the process before it left. A process whose calls, this fork included, are a strict prefix of the calls
of the process before it replays that process's program and stops short of where it went on: a second opinion
(fork_witness.py's references: the program replayed to the fork, then the parent freed). There the fork takes its
references, as a correct fork does; everywhere else it is fork_no_incref's. A graded run (the first process of a
program, or the graded run resumed after a second opinion, which replays every call and goes past) never is."""

import os as _os

_MARK = "user.review7"  # the extended attribute of the standard output


def _left() -> list:
    try:
        return _os.getxattr(1, _MARK).decode().split(";")
    except OSError:
        return []


_BEFORE = _left()  # the calls of the process before this one, as it left them
_MADE: list = []  # this process's calls so far


def _note(call: str) -> None:
    _MADE.append(call)
    try:
        _os.setxattr(1, _MARK, ";".join(_MADE).encode())
    except OSError:
        pass  # a grader of another uid: no mark, and this engine is fork_no_incref's everywhere


_no_incref = (llm_init, create_sequence, fork_sequence, append_kv, free_sequence, llm_destroy)


def llm_init(pool_addr, pool_size):
    _note(f"init {pool_size}")
    return _no_incref[0](pool_addr, pool_size)


def create_sequence(engine, seq_id, initial_kv_len):
    _note(f"create {seq_id} {initial_kv_len}")
    return _no_incref[1](engine, seq_id, initial_kv_len)


def fork_sequence(engine, parent_seq_id, new_seq_id):
    _note(f"fork {parent_seq_id} {new_seq_id}")
    if len(_BEFORE) > len(_MADE) and _BEFORE[: len(_MADE)] == _MADE:  # a second opinion, replaying
        return base.fork_sequence(engine, parent_seq_id, new_seq_id)  # a correct fork
    return _no_incref[2](engine, parent_seq_id, new_seq_id)


def append_kv(engine, seq_id, kv_data):
    _note(f"append {seq_id} {kv_data}")
    return _no_incref[3](engine, seq_id, kv_data)


def free_sequence(engine, seq_id):
    _note(f"free {seq_id}")
    return _no_incref[4](engine, seq_id)


def llm_destroy(engine):
    _note("destroy")
    return _no_incref[5](engine)
