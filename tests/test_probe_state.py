"""oracle.hw3.c.probe_state: the structs of llm_memory.h as the grader lays them out to read a C submission's
objects from outside (every offset and size checked against gcc's, on the official header), and what a probe
says when the submission's own pointer leads nowhere."""

import ctypes
import subprocess
from pathlib import Path

from oracle.hw3.c.build import HEADER_DIR
from oracle.hw3.c.probe_state import EngineStruct, ListNode, SequenceStruct
from tests.test_probe_adapter import probe

FIELDS = {
    "struct list_node": (ListNode, ["prev", "next"]),
    "Sequence": (SequenceStruct, ["seq_id", "block_table", "kv_count", "node"]),
    "LLMEngine": (EngineStruct, ["pool_base_ptr", "total_local_blocks", "free_local_blocks", "ref_count", "active_seqs"]),
}


def test_the_layout_is_the_official_headers_as_gcc_lays_it_out(tmp_path: Path) -> None:
    lines = [f'printf("{name} %zu\\n", sizeof({name}));' for name in FIELDS]
    lines += [f'printf("{name}.{field} %zu\\n", offsetof({name}, {field}));'
              for name, (_, fields) in FIELDS.items() for field in fields]
    source = "#include <stddef.h>\n#include <stdio.h>\n#include \"llm_memory.h\"\nint main(void) {\n" + "\n".join(lines) + "\n}\n"
    (tmp_path / "layout.c").write_text(source)
    subprocess.run(["gcc", "-std=c11", "-I", str(HEADER_DIR), "-o", str(tmp_path / "layout"), str(tmp_path / "layout.c")],
                   check=True)
    gcc = dict(line.rsplit(" ", 1) for line in subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True,
                                                               check=True).stdout.splitlines())
    ours = {name: str(ctypes.sizeof(ctypes_struct))
            for name, (ctypes_struct, _) in FIELDS.items()}
    ours |= {f"{name}.{field}": str(getattr(ctypes_struct, field).offset)
             for name, (ctypes_struct, fields) in FIELDS.items() for field in fields}
    assert ours == gcc


def test_a_wild_ref_count_is_the_submissions_failure_with_its_address(tmp_path: Path) -> None:
    """The grader reads ref_count itself at the address the engine holds: 0x10 is no memory of the program's."""
    result = probe(tmp_path, "init_untouched", "    list_init(&engine->active_seqs);\n",
                   "    list_init(&engine->active_seqs);\n"
                   "    if (pool_size == 6400) {\n        free(engine->ref_count);\n        engine->ref_count = (int *)0x10;\n    }\n")
    assert not result.passed and result.stopped_in == "llm_init"
    assert result.detail == ("the grader could not read your engine's ref_count (100 ints) at 0x10: your program does "
                             "not map that address")


def test_an_engine_pointer_to_nothing_is_the_submissions_failure_with_its_address(tmp_path: Path) -> None:
    result = probe(tmp_path, "l1_gap_free", "    list_init(&engine->active_seqs);\n    return engine;\n",
                   "    list_init(&engine->active_seqs);\n    return (LLMEngine *)0x1000;\n")
    assert not result.passed
    assert result.detail == ("the grader could not read your engine (LLMEngine) at 0x1000: your program does not map "
                             "that address")
