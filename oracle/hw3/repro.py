"""A failing program as a standalone C file a student can compile with their llm_memory.c and step through.

The file replays the calls one function per step (`break step_7` in gdb; step N is call N everywhere the
grader numbers calls), checks each return value as it goes and, after the last call, the whole state
pagedcheck compares: counters, every ref_count, the active list, each sequence's table and records, the pool
byte for byte and its guard zones. It prints the first difference in pagedcheck's words and exits 1, or
prints "OK: no divergence" and exits 0.

A repro counts the heap as the grader does (`heap=True`, the default): it includes llm_memory.c itself, with
malloc, calloc, realloc and free turned by macros into trackers (c/repro_heap.c) that keep the file:line of
each live block; a call that must fail and allocates, or a block still live with no engine (a leak after
llm_destroy), is a difference, and a leak names each block and where it was allocated. It is built alone:
`gcc FLAGS repro.c -o repro` beside llm_memory.c. A submission whose names clash with the harness's gets the
two-file repro without heap checks (`heap=False`), built `gcc FLAGS llm_memory.c repro.c`.
"""

import shutil
from pathlib import Path
from typing import Iterable, Sequence

from oracle.hw3.c.build import HEADER, OFFICIAL_FLAGS, SOURCE_NAME, submission_source
from oracle.native.build import gcc
from oracle.hw3.call import POINTER_CALLS, Call, shown
from oracle.hw3.model import Model
from oracle.hw3.pool import c_defines, magic_slot
from oracle.hw3.rules import fails
from oracle.hw3.spec import INT32_MAX, INT32_MIN, KV_SIZE, L2_PT_SIZE
from oracle.sandbox import Sandbox, shared

CHECKS = Path(__file__).with_name("c") / "repro_check.c"
HEAP = Path(__file__).with_name("c") / "repro_heap.c"
_TRACKED = ("malloc(size) heap_malloc((size), __FILE__, __LINE__)",
            "calloc(count, size) heap_calloc((count), (size), __FILE__, __LINE__)",
            "realloc(ptr, size) heap_realloc((ptr), (size), __FILE__, __LINE__)",
            "free(ptr) heap_free((ptr), __FILE__, __LINE__)")
MIN_RUN = 4  # consecutive appends of consecutive values replayed as one loop


def build_command(name: str, flags: Sequence[str] = OFFICIAL_FLAGS, heap: bool = True) -> str:
    """The command that builds and runs a repro named `name` beside llm_memory.c and llm_memory.h."""
    sources = [f"{name}.c"] if heap else [SOURCE_NAME, f"{name}.c"]
    return " ".join(["gcc", *flags, *sources, "-o", name]) + f" && ./{name}"


def repro_c(calls: Sequence[Call], model: Model, divergence: str, *, name: str = "repro",
            flags: Sequence[str] = OFFICIAL_FLAGS, heap: bool = True) -> str:
    """C source replaying `calls` and checking the state against `model` (the state after the last call);
    `name` is the file's stem and `flags` the compiler's, for the build command in its header comment; `heap`:
    the repro includes llm_memory.c and counts its heap (see the module's docstring)."""
    heap_words = (" * llm_memory.c is part of this program (#include below): each malloc, calloc, realloc and free it makes is\n"
                  " * counted, so a leak names each block still allocated and the line that allocated it.\n") if heap else \
        f" * Heap errors and leaks: run it under valgrind --leak-check=full ./{name}\n"
    header = f"""/* pagedcheck repro: {len(calls)} call(s) against llm_memory.c, checked against the HW3 specification.
 *
 * pagedcheck found: {_comment(divergence)}
 *
 * Build and run, with llm_memory.c and llm_memory.h in this directory:
 *     {build_command(name, flags, heap)}
 * Step N makes call N. Each step checks its call's return value; after the last step the whole state is
 * compared with what the specification requires. The program prints the first difference ("step N: ..."
 * or "after step N: ...") and exits 1, or prints "OK: no divergence" and exits 0.
{heap_words} * To watch one call: gdb ./{name}, then `break step_N` (a run of appends: `break steps_N_to_M`) and `run`.{"" if heap else _heap_note(divergence)}
 */"""
    main = """int main(void)
{
    mallopt(M_PERTURB, 0x5A); /* malloc'd memory reads 0xA5, as under pagedcheck's driver */
    replay();
    no_pool();
    puts("OK: no divergence");
    return 0;
}"""
    return _source(header, [_program(calls, model, "", heap)], _max_sequences([calls]), main, heap)


def build_repro(
    source: str, submission: Path, workdir: Path, *, name: str = "repro", flags: Sequence[str] = OFFICIAL_FLAGS,
    sandbox: Sandbox | None = None,
) -> tuple[Path | None, str]:
    """Compile `source` with the submission's llm_memory.c (against our header alone, never one beside it) in
    the sandbox, using the official flags (or `flags`: a submission graded despite warnings builds without
    -Werror); the program (in workdir, with both sources), or None, and everything gcc printed. A source that
    includes llm_memory.c (a heap-counting repro) is compiled alone."""
    workdir.mkdir(parents=True, exist_ok=True)
    submitted = submission_source(submission).read_bytes()
    (workdir / SOURCE_NAME).write_bytes(submitted)
    (workdir / f"{name}.c").write_text(source)
    built, output = gcc(sandbox or shared(), HEADER, {SOURCE_NAME: submitted, f"{name}.c": source.encode()},
                        [*flags, *([] if _includes_submission(source) else [SOURCE_NAME]), f"{name}.c"], name)
    if built is None:
        return None, output
    binary = workdir / name
    shutil.copyfile(built, binary)
    binary.chmod(0o755)
    return binary, output


# ---- the parts of the source ----------------------------------------------------------------------------


def _includes_submission(source: str) -> bool:
    return f'#include "{SOURCE_NAME}"' in source


def _source(header: str, programs: list[str], max_sequences: int, main: str, heap: bool = False) -> str:
    """The whole file; with `heap`, llm_memory.c is included between the heap trackers and the harness."""
    counted = ""
    if heap:
        macros = "\n".join(f"#define {macro}" for macro in _TRACKED)
        undo = "\n".join(f"#undef {macro.split('(')[0]}" for macro in _TRACKED)
        counted = (f"#define HEAP_TRACKED 1\n{HEAP.read_text()}\n{macros}\n"
                   f'#include "{SOURCE_NAME}" /* your code, its allocations counted */\n{undo}\n\n')
    defines = f"""#include "llm_memory.h"

#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

{counted}{_redefinable(c_defines())}#undef MAX_SEQUENCES
#define MAX_SEQUENCES {max_sequences}   /* create and fork calls in a program, at least 1 */
"""
    return "\n".join([header, defines, CHECKS.read_text(), *programs, main]) + "\n"


def _redefinable(defines: str) -> str:
    """The harness's #defines, each after an #undef: llm_memory.c, included before them, may have its own."""
    return "".join(f"#undef {line.split()[1].split('(')[0]}\n{line}\n" if line.startswith("#define ") else line + "\n"
                   for line in defines.splitlines())


def _max_sequences(programs: Iterable[Sequence[Call]]) -> int:
    return max([1, *(sum(c.api in ("create_sequence", "fork_sequence") for c in calls) for calls in programs)])


def _program(calls: Sequence[Call], model: Model, name: str, heap: bool = False) -> str:
    """The step functions, the expected final state and replay[_name](), which runs and checks them all."""
    prefix = f"{name}_" if name else ""
    steps, functions, number = [], [], 1
    for run in _runs(calls):
        function, body = _step(run, number, prefix, heap)
        steps.append(function)
        functions.append(body)
        number += len(run)
    last = len(calls)
    calls_made = "\n".join(f"    {function}();" for function in steps)
    replay = f"""/* Makes every call, then checks the state after the last one. */
static void replay{"_" + name if name else ""}(void)
{{
{calls_made}
    check_state({last}, &{prefix}expected);
}}
"""
    return "\n".join([*functions, _expected_state(model, prefix, last), replay])


def _runs(calls: Sequence[Call]) -> list[list[Call]]:
    """The calls in order, with MIN_RUN or more appends of kv_data, kv_data+1, ... (a burst) grouped."""
    groups: list[list[Call]] = []
    for call in calls:
        if groups and _continues(groups[-1][-1], call):
            groups[-1].append(call)
        else:
            groups.append([call])
    return [piece for group in groups for piece in ([group] if len(group) >= MIN_RUN else [[c] for c in group])]


def _continues(last: Call, call: Call) -> bool:
    return (
        call.api == last.api == "append_kv"
        and (call.null, call.args[0], call.expected) == (last.null, last.args[0], last.expected)
        and call.args[1] == last.args[1] + 1
    )


def _step(run: list[Call], number: int, prefix: str, heap: bool = False) -> tuple[str, str]:
    """A function making one call (or one run of appends) and checking what it returned (and, with `heap`,
    that a call that must fail allocated nothing)."""
    if len(run) > 1:
        first, last = run[0], run[-1]
        function = f"{prefix}steps_{number}_to_{number + len(run) - 1}"
        engine = "NULL" if first.null else "engine"
        seq_id, kv_data = _c_int(first.args[0]), _c_int(first.args[1])
        return function, f"""/* steps {number} to {number + len(run) - 1}: {first} ... {last}, each must return {first.expected} */
static void {function}(void)
{{
    for (int i = 0; i < {len(run)}; i++) {{{"" if not heap else chr(10) + "        heap_step = " + str(number) + " + i;"}
        char call[64];
        snprintf(call, sizeof call, "append_kv({engine}, %d, %d)", {seq_id}, {kv_data} + i);
        {"unsigned long allocated = heap_allocations;" + chr(10) + "        " if heap and fails(first.api, first.expected) else ""}check_int({number} + i, call, append_kv({engine}, {seq_id}, {kv_data} + i), {first.expected});{chr(10) + "        heap_check_no_allocation(" + str(number) + " + i, call, allocated);" if heap and fails(first.api, first.expected) else ""}
    }}
}}
"""
    (call,) = run
    function = f"{prefix}step_{number}"
    text, what = str(call), POINTER_CALLS.get(call.api, "")
    engine = "NULL" if call.null else "engine"
    args = ", ".join(_c_int(a) for a in call.args)
    if call.api == "llm_init":
        (size,) = call.args
        body = (
            f"    no_pool();\n    engine = llm_init(NULL, {size});\n"
            if call.null
            else f"    engine = llm_init(new_pool({size}), {size});\n"
        )
        body += f'    check_pointer({number}, "{text}", engine, {int(bool(call.expected))}, "{what}");\n'
    elif call.api in POINTER_CALLS:
        body = (
            f"    Sequence *seq = remember({call.api}({engine}, {args}));\n"
            f'    check_pointer({number}, "{text}", seq, {int(bool(call.expected))}, "{what}");\n'
        )
    elif call.api == "llm_destroy":
        body = f"    int ret = llm_destroy({engine});\n"
        if not call.null:
            body += "    engine = NULL; /* destroyed: never used again */\n"
        body += f'    check_int({number}, "{text}", ret, {call.expected});\n'
    else:
        body = f'    check_int({number}, "{text}", {call.api}({engine}, {args}), {call.expected});\n'
    if heap and fails(call.api, call.expected):
        body = f"    unsigned long allocated = heap_allocations;\n{body}" \
               f'    heap_check_no_allocation({number}, "{text}", allocated);\n'
    if heap:
        body = f"    heap_step = {number};\n{body}"
    return function, f"""/* step {number}: {text} must return {shown(call.api, call.expected)} */
static void {function}(void)
{{
{body}}}
"""


def _expected_state(model: Model, prefix: str, step: int) -> str:
    """The model after the last step as C data: counters, ref counts, sequences, written pool slots."""
    lines = [f"/* The state the specification requires after step {step}. */"]
    ref_count = model.ref_count() if model.live else []
    if ref_count:
        lines.append(f"static const int {prefix}ref_count[] = {_array(ref_count, 16)};")
    entries = []
    for index, (seq_id, seq) in enumerate(model.sequences.items()):
        blocks = f"{prefix}seq_{index}_blocks"
        lines.append(f"static const int {blocks}[] = {_array(seq.blocks, L2_PT_SIZE)};")
        entries.append(
            f"    {{.seq_id = {_c_int(seq_id)}, .kv_count = {len(seq.values)}, .n_blocks = {len(seq.blocks)}, .blocks = {blocks}}},"
        )
    if entries:
        lines.append(f"static const struct expected_sequence {prefix}sequences[] = {{\n" + "\n".join(entries) + "\n};")
    written = sorted(model.memory.items())
    if written:
        pairs = [f"{{{slot}, {_c_value(value, model.pool_size or 0)}}}" for slot, value in written]
        lines.append(f"static const struct written_slot {prefix}written[] = {_array(pairs, 4)};")
    fields = {
        "live": int(model.live),
        "has_pool": int(model.pool_size is not None),
        "total_local_blocks": model.total if model.live else 0,
        "free_local_blocks": model.free_count() if model.live else 0,
        "ref_count": f"{prefix}ref_count" if ref_count else "NULL",
        "n_sequences": len(entries),
        "sequences": f"{prefix}sequences" if entries else "NULL",
        "n_written": len(written),
        "written": f"{prefix}written" if written else "NULL",
    }
    body = "\n".join(f"    .{name} = {value}," for name, value in fields.items())
    lines.append(f"static const struct expected_state {prefix}expected = {{\n{body}\n}};\n")
    return "\n".join(lines)


def _array(items: Sequence[object], per_line: int) -> str:
    rows = [", ".join(map(str, items[i : i + per_line])) for i in range(0, len(items), per_line)]
    return "{" + rows[0] + "}" if len(rows) == 1 else "{\n    " + ",\n    ".join(rows) + ",\n}"


def _c_int(value: int) -> str:
    """An int argument as C source; INT_MIN has no literal of type int."""
    return {INT32_MIN: "INT_MIN", INT32_MAX: "INT_MAX"}.get(value, str(value))


def _c_value(value: int, pool_size: int) -> str:
    """A pool slot's value; a magic number (CoW copies them) as MAGIC(its slot)."""
    slot = magic_slot(value)
    return f"MAGIC({slot})" if slot < -(-pool_size // KV_SIZE) else _c_int(value)


def _heap_note(divergence: str) -> str:
    if not divergence.startswith("heap:"):
        return ""
    return (
        "\n *\n * That divergence is about heap allocations, which this program does not count: it may print OK."
        "\n * Run it under valgrind to see a leak."
    )


def _comment(text: str) -> str:
    """Text safe inside a C block comment, on one line."""
    return " ".join(text.replace("*/", "* /").split())
