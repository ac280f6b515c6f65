"""Hostile Python submission (review 5), on top of tests/broken/fork_no_incref.patch (fork_sequence shares the
parent's blocks without taking a reference of them): the fork witness (oracle/hw3/fork_witness.py) replays the
program in a fresh process of the submission while the graded run's process is still alive. So at import each
process binds an abstract unix socket of one name: the first binds it; a process that finds it taken knows another
process of the submission is alive, i.e. it is a second opinion, and forks correctly there. The witness then sees a
correct fork, never blames it, and what the fork's missing references break later (an append that writes in place
into a block the child shares) keeps the append's rule.

Binding needs no connection: Landlock's scope (ABI 6) keeps a run from connecting to another run's abstract socket,
not from finding its name taken. Under bubblewrap each run has a network namespace of its own, and so abstract
names of its own."""

import socket as _socket


def _alone() -> bool:
    mark = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        mark.bind("\0pagedcheck-review5-@PORT@")
    except OSError:
        mark.close()
        return False
    globals()["_mark"] = mark  # held open for the process's life
    return True


_ALONE = _alone()
_fork_without_references = fork_sequence


def fork_sequence(engine, parent_seq_id, new_seq_id):
    fork = _fork_without_references if _ALONE else base.fork_sequence
    return fork(engine, parent_seq_id, new_seq_id)
