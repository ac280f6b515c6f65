"""The HW3 family: the CS110 "vLLM PagedAttention memory manager" C API (llm_init ... llm_destroy)."""

from pathlib import Path

from oracle.family import AdapterFactory, Family, MutationTarget, on_first_use
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


FAMILY = Family(
    name="hw3",
    summary="CS110 HW3 paged KV-cache manager: 64-byte blocks, 16x16 block table, CoW, first fit",
    machine_for=on_first_use("oracle.hw3.machine", "machine_for"),
    load_adapter=load_adapter,
    repro_preamble=repro_preamble,
    load_rubric=on_first_use("oracle.hw3.grade", "load"),
    picture=on_first_use("oracle.hw3.picture", "picture"),
    grade=on_first_use("oracle.hw3.grade", "grade"),
    default_rubric=Path(__file__).with_name("rubric.toml"),
    languages=("c", "python"),
    describe_failure=on_first_use("oracle.hw3.fuzz_text", "failure_in_calls"),
    mutation=MutationTarget("engine/", "mutation/equivalent.toml",
                            c_reference=Path(__file__).resolve().parents[2] / "engine" / "c" / "llm_memory.c"),
)
