"""What the grader compares for an engine whose objects it does not read: a Python submission's (UNREAD).

A Python submission's objects live in its own interpreter, and whatever reads them there runs, or can be watched
by, the submission's code (a property, the calling frame, a patched builtin): the counters, ref_count, block
tables and active list read there are the submission's word, never evidence (tests/test_tamper_review2.py's
free_count_said_to_reader and order_said_to_reader). So the grader reads none of them. In their place it puts
the model's own state, the one the spec says the calls leave: compared with the model, it differs in nothing,
and what can differ is what the grader observes itself, the calls' return values and the pool (the grader's own
memory, pool_file.py) with its guards. A sequence's records are read through the model's tables from that
pool (compare.py), so a record written into the wrong block, or a block copied wrongly, still shows; past
another rule's bug the model takes over the pool and keeps its own tables and counts (resync.py). A rule that
shows only in the objects (the list's order, the L1 walk) cannot show: its item is not graded for a Python
submission (evidence.ITEMS). Past another rule's bug the model takes over the pool and keeps its own tables and counts;
after a call whose return value differs, or an append whose record the pool shows astray, nothing says what the
engine now holds, and the model follows that program no further (replay.py)."""

from dataclasses import replace

from oracle.hw3.exact import expected_table
from oracle.hw3.model import Model
from oracle.hw3.observation import UNREAD, EngineState, Observation, SequenceState


def modelled(model: Model) -> EngineState:
    """The engine's state as the model holds it: what a correct engine's objects would say now."""
    return EngineState(model.total, model.free_count(), tuple(model.ref_count()), tuple(
        SequenceState(seq_id, len(seq.values), expected_table(seq.blocks, seq.wild, seq.bare))
        for seq_id, seq in model.sequences.items()))


def filled(seen: Observation | None, model: Model) -> Observation | None:
    """`seen` with the model's state in place of an engine the grader did not read (UNREAD); as it is
    otherwise. An engine handle the call returned where the model has none is its return value's difference."""
    if seen is None or seen.engine is not UNREAD:
        return seen
    return replace(seen, engine=modelled(model) if model.live else None, state_read=False)
