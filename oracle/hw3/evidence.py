"""What a verdict rests on, declared as data, and what a Python submission's grade may rest on.

Every white-box probe (probes.py RESTS_ON) names the kinds of fact its verdict needs:

    RETURNS  what the API calls return
    POOL     the pool's bytes: memory the grader owns and reads back itself (pool_file.py)
    STATE    the engine's objects read white-box: the counters, ref_count, the block tables, the active list
    EDIT     an edit of the engine's live objects in place (a gap made in a block table, a count set), to
             reach a state no sequence of API calls makes

A Python submission's objects live only in its own interpreter, where the grader's server (pyserve.py) runs
as `__main__`: code the submission imports can replace the server's operations, so an edit made there is an
edit the submission may skip or fake, and nothing outside can watch it. Hence NOT_GRADED: a probe resting on
an EDIT is never run on a Python submission (the Python target has no edit operation, pyserve none either),
and its part of an item earns no point and costs none: it leaves the score and the maximum, said once in a
student's words (WORDS). C's edits are made by the grader's driver (oracle/hw3/c/), graded as before.

"Not graded" is decided by the probe's declaration, never by where a run goes: a probe that edits only on a
path the submission's state chooses judges, where the target cannot edit, on what holds without the edit, so
a submission cannot steer a graded probe into "not graded" to hide a bug.
"""

RETURNS, POOL, STATE, EDIT = "returns", "pool", "state", "edit"

NOT_GRADED: dict[str, frozenset[str]] = {"c": frozenset(), "python": frozenset({EDIT})}

WORDS = {  # why a part is not graded, as a student reads it after "Not graded for a Python submission: "
    EDIT: "this check edits your engine's tables inside your own process, where the grader cannot watch the edit",
}


class InProcessEdit(Exception):
    """A probe asked a target that cannot edit (a Python submission's) for an edit: what the probe would have
    judged past it is not graded for that submission (`kind`: "python")."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"a {_LANGUAGE[kind]} submission's objects are not edited by the grader")
        self.kind = kind


def not_graded(kind: str, rests_on: frozenset[str]) -> str | None:
    """Why a verdict resting on `rests_on` is not graded for a submission of `kind` ("c", "python"), in a
    student's words; None when it is graded."""
    left_out = sorted(rests_on & NOT_GRADED.get(kind, frozenset()))
    return None if not left_out else f"Not graded for a {_LANGUAGE[kind]} submission: {WORDS[left_out[0]]}."


_LANGUAGE = {"c": "C", "python": "Python"}
