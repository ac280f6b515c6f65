"""Hostile prefix-family submission (review 5), appended to free_queue_lie.py (forward_order_free's pool, its shown
free queue lying in a correct free's order): the second opinion on a free's order (oracle/prefix/queue_order.py)
replays the program in a fresh process of the pool and drains its queue with admits. So at import each process
binds an abstract unix socket of one name, as witness_not_alone.py does: a process that finds it taken knows
another process of the submission is alive, i.e. it is a second opinion, and frees tail first there, as a correct
pool does. Its admits then take a correct queue, and the lie in the graded run's shown queue goes unseen.

Binding needs no connection: Landlock's scope (ABI 6) keeps a run from connecting to another run's abstract socket,
not from finding its name taken. Under bubblewrap each run has a network namespace of its own, and so abstract
names of its own."""

import socket as _socket


def _alone() -> bool:
    mark = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        mark.bind("\0pagedcheck-review5-queue-@PORT@")
    except OSError:
        mark.close()
        return False
    globals()["_mark"] = mark  # held open for the process's life
    return True


_ALONE = _alone()
_Lying = KVCacheManager  # noqa: F821  (free_queue_lie.py's, above)


class KVCacheManager(_Lying):
    def free(self, request):
        blocks = self.req_to_blocks.get(request.request_id)
        if blocks and not _ALONE:  # a second opinion: its blocks go back tail first
            blocks.reverse()
        super().free(request)
