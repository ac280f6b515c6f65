"""An ELF program's interpreter (PT_INTERP: the dynamic loader the kernel starts it with), read and rewritten in
place, and an ELF file's build id (where its detached debug information lies). The Landlock fallback starts a C driver through the frozen runtime's loader this way (oracle/runtime.py),
so that the driver's process still runs the driver's own file: the grader finds that process by its executable
(oracle/native/outside.py's driver_pid).

The copy's loader lies at a longer path than the system's, so the driver is linked with a padded interpreter
(`padded`: the system's loader, with a run of slashes in its path: the same file), whose room the copy's path
fits in (`point_at`).

    gcc ... -Wl,--dynamic-linker=$(padded(system_loader()))    # at the link
    point_at(program, "/root/.cache/pagedcheck/runtime/python3.11-.../libs/ld.so")
"""

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

PT_INTERP, PT_NOTE, NT_GNU_BUILD_ID = 3, 4, 3
ROOM = 512  # bytes of a padded interpreter, its final NUL included
_SYSTEM_PROGRAM = "/bin/sh"  # a program of the system's, whose interpreter is the system's loader


@dataclass(frozen=True, slots=True)
class Interpreter:
    offset: int  # where its text lies in the file
    room: int  # the bytes it holds there, its final NUL included
    path: str


def _segments(file: BinaryIO) -> Iterator[tuple[int, int, int]]:
    """(type, file offset, file size) of each program header of an open ELF file; none for a file that is not ELF."""
    head = file.read(64)
    if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        return
    order = "<" if head[5] == 1 else ">"
    if head[4] == 2:  # ELF64: e_phoff at 32, e_phentsize and e_phnum at 54; p_offset, p_filesz
        (table,), (size, count) = struct.unpack_from(order + "Q", head, 32), struct.unpack_from(order + "HH", head, 54)
        entry, fields = order + "IIQQQQQQ", (2, 5)
    else:  # ELF32: e_phoff at 28, e_phentsize and e_phnum at 42
        (table,), (size, count) = struct.unpack_from(order + "I", head, 28), struct.unpack_from(order + "HH", head, 42)
        entry, fields = order + "IIIIIIII", (1, 4)
    if size < struct.calcsize(entry):
        return
    file.seek(table)
    headers = file.read(size * min(count, 256))
    for at in range(0, len(headers) - size + 1, size):
        values = struct.unpack_from(entry, headers, at)
        yield values[0], values[fields[0]], values[fields[1]]


def interpreter(program: Path | str) -> Interpreter | None:
    """The interpreter an ELF program names; None for a file that is not ELF, or names none (static)."""
    try:
        with open(program, "rb") as file:
            for kind, offset, room in list(_segments(file)):
                if kind == PT_INTERP:
                    file.seek(offset)
                    text = file.read(min(room, 4096))
                    return Interpreter(offset, room, text.split(b"\0", 1)[0].decode(errors="replace"))
    except (OSError, struct.error):
        return None
    return None


def build_id(path: Path | str) -> str | None:
    """An ELF file's GNU build id, in hex (how debuggers and valgrind find its detached debug information)."""
    try:
        with open(path, "rb") as file:
            for kind, offset, size in list(_segments(file)):
                if kind != PT_NOTE:
                    continue
                file.seek(offset)
                notes, at = file.read(min(size, 1 << 16)), 0
                while at + 12 <= len(notes):
                    name_size, desc_size, note = struct.unpack_from("<III", notes, at)
                    name_at = at + 12
                    desc_at = name_at + (name_size + 3) // 4 * 4
                    if note == NT_GNU_BUILD_ID and notes[name_at:name_at + name_size] == b"GNU\0":
                        return notes[desc_at:desc_at + desc_size].hex()
                    at = desc_at + (desc_size + 3) // 4 * 4
    except (OSError, struct.error):
        return None
    return None


def system_loader() -> str:
    """The system's dynamic loader (/lib64/ld-linux-x86-64.so.2 on x86-64), as the system's programs name it."""
    found = interpreter(_SYSTEM_PROGRAM)
    if found is None:
        raise OSError(f"{_SYSTEM_PROGRAM} names no dynamic loader")
    return found.path


def padded(loader: str) -> str:
    """`loader`'s path with slashes added before its file name, ROOM bytes long with its NUL: the same file."""
    folder, _, name = loader.rpartition("/")
    return folder + "/" * (ROOM - 1 - len(loader)) + "/" + name


def point_at(program: Path, loader: str) -> bool:
    """Makes `program` (a file of ours) name `loader` as its interpreter, where its room holds that path; whether
    it does now."""
    found = interpreter(program)
    text = loader.encode() + b"\0"
    if found is None or len(text) > found.room:
        return False
    with open(program, "r+b") as file:
        file.seek(found.offset)
        file.write(text + b"\0" * (found.room - len(text)))
    return True
