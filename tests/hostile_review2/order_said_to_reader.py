"""Hostile Python submission (review2), on top of tests/broken/create_at_head.patch: the grader's server reads the
engine inside the submission's interpreter, and the engine tells that reader from its own code by the calling
frame (sys._getframe(1): the server is `__main__`), replacing nothing of the server's. active_seqs becomes a
property; read by the server, it first relinks the list in the order the sequences were made, so every state
the grader reads is in creation order; the bug's create_sequence still inserts at the head."""

import sys as _sys

_slot = LLMEngine.active_seqs  # noqa: F821 (the engine's class, in this module): the slot's own descriptor
_made = {}  # id(sequence) -> (the order it was made in, the sequence)
_create, _fork = create_sequence, fork_sequence  # noqa: F821


def create_sequence(engine, seq_id, initial_kv_len):  # noqa: F811
    seq = _create(engine, seq_id, initial_kv_len)
    if seq is not None:
        _made[id(seq)] = (len(_made), seq)
    return seq


def fork_sequence(engine, parent_seq_id, new_seq_id):  # noqa: F811
    seq = _fork(engine, parent_seq_id, new_seq_id)
    if seq is not None:
        _made[id(seq)] = (len(_made), seq)
    return seq


def _order(seq):
    made = _made.get(id(seq))
    return made[0] if made is not None and made[1] is seq else -1


def _said(self):
    head = _slot.__get__(self, type(self))
    if _sys._getframe(1).f_globals.get("__name__") == "__main__":  # the grader's server reading the engine
        nodes, node = [], head.next
        while node is not head:
            nodes.append(node)
            node = node.next
        for node in sorted(nodes, key=lambda n: _order(n.owner)):
            node.unlink()
            node.add_tail(head)
    return head


LLMEngine.active_seqs = property(_said, lambda self, value: _slot.__set__(self, value))  # noqa: F821
