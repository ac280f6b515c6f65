"""The HW3 family: the CS110 "vLLM PagedAttention memory manager" C API (llm_init ... llm_destroy)."""

from pathlib import Path

from oracle.family import AdapterFactory, Family, MutationTarget
from oracle.grading.rubric import Rubric
from oracle.hw3 import difference  # noqa: F401  (words the family's aspects)
from oracle.hw3.adapters import BUILTIN_ENGINE, load_python


def load_adapter(impl: str) -> AdapterFactory:
    """`engine` (the built-in Python engine), a C submission (`llm_memory.c`, or a directory holding one),
    or a Python module `pkg.module[:attr]`. Raises ValueError with a one-line reason."""
    if impl == "engine":
        return load_python(BUILTIN_ENGINE)
    if impl.endswith(".c") or Path(impl).is_dir():
        from oracle.hw3.c.adapter import load_c

        return load_c(impl)
    return load_python(impl)


def repro_preamble(impl: str) -> list[str]:
    """The core's preamble (oracle/table_machine.py) for HW3Machine, imported on first use (it needs Hypothesis)."""
    from oracle.table_machine import repro_preamble as lines

    return lines("oracle.hw3", "HW3Machine")(impl)


def load_rubric(path: Path | None = None) -> Rubric:
    """The HW3 rubric at `path`, or the shipped one (oracle/hw3/rubric.toml); raises RubricError."""
    from oracle.hw3.grade import load

    return load(path)


def grade_submission(*args, **kwargs):  # type: ignore[no-untyped-def]
    """grade.grade, imported on first use (it needs gcc's and the sandbox's modules). Not named `grade`: that
    name is the submodule oracle.hw3.grade, which `from oracle.hw3 import grade` must find."""
    from oracle.hw3.grade import grade as run

    return run(*args, **kwargs)


def machine_for(*args, **kwargs):  # type: ignore[no-untyped-def]
    """machine.machine_for, imported on first use: in a Python submission's child process (the system Python,
    no Hypothesis) this package must import."""
    from oracle.hw3.machine import machine_for as make

    return make(*args, **kwargs)


def picture(evidence: object):  # type: ignore[no-untyped-def]
    """picture.picture, imported on first use (it needs the grading checks, which import FAMILY)."""
    from oracle.hw3.picture import picture as draw

    return draw(evidence)


def failure_in_calls(failure: BaseException | None, impl: str) -> list[str]:
    """fuzz_text.failure_in_calls, imported on first use (it needs the grading checks, which import FAMILY)."""
    from oracle.hw3.fuzz_text import failure_in_calls as tell

    return tell(failure, impl)


FAMILY = Family(
    name="hw3",
    summary="CS110 HW3 paged KV-cache manager: 64-byte blocks, 16x16 block table, CoW, first fit",
    machine_for=machine_for,
    load_adapter=load_adapter,
    repro_preamble=repro_preamble,
    load_rubric=load_rubric,
    picture=picture,
    grade=grade_submission,
    default_rubric=Path(__file__).with_name("rubric.toml"),
    languages=("c", "python"),
    describe_failure=failure_in_calls,
    mutation=MutationTarget("engine/", "mutation/equivalent.toml",
                            c_reference=Path(__file__).resolve().parents[2] / "engine" / "c" / "llm_memory.c"),
)
