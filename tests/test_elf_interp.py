"""oracle/elf_interp.py: an ELF program's interpreter, read and pointed elsewhere, and an ELF file's build id, on
programs the real gcc links and the system's own files."""

import shutil
import subprocess
from pathlib import Path

import pytest

from oracle.elf_interp import ROOM, build_id, interpreter, padded, point_at, system_loader


def _linked(folder: Path, *flags: str) -> Path:
    (folder / "hello.c").write_text('#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n')
    program = folder / "hello"
    subprocess.run(["gcc", "-O1", *flags, "-o", str(program), str(folder / "hello.c")], check=True)
    return program


def test_a_padded_interpreter_is_the_same_loader_and_the_program_runs(tmp_path: Path) -> None:
    loader = system_loader()
    assert Path(loader).resolve() == Path(padded(loader)).resolve() and len(padded(loader)) == ROOM - 1
    program = _linked(tmp_path, f"-Wl,--dynamic-linker={padded(loader)}")
    found = interpreter(program)
    assert found is not None and found.path == padded(loader) and found.room == ROOM
    assert subprocess.run([program], capture_output=True, text=True).stdout == "hello\n"


def test_point_at_names_another_loader_where_it_fits_and_the_program_runs_by_it(tmp_path: Path) -> None:
    program = _linked(tmp_path, f"-Wl,--dynamic-linker={padded(system_loader())}")
    copy = tmp_path / "a-loader-of-our-own.so"
    shutil.copy2(Path(system_loader()).resolve(), copy)
    assert point_at(program, str(copy))
    assert interpreter(program).path == str(copy)
    assert subprocess.run([program], capture_output=True, text=True).stdout == "hello\n"
    copy.unlink()  # the program now starts by that file alone
    with pytest.raises(OSError):
        subprocess.run([program], capture_output=True)


def test_point_at_leaves_a_program_whose_interpreter_has_no_room(tmp_path: Path) -> None:
    program = _linked(tmp_path)
    before = program.read_bytes()
    assert not point_at(program, "/a/path/longer/than/the/systems/own/loader/" + "x" * 64)
    assert program.read_bytes() == before


def test_a_file_that_is_not_a_dynamic_elf_program_names_no_interpreter(tmp_path: Path) -> None:
    (tmp_path / "script").write_text("#!/bin/sh\necho\n")
    static = _linked(tmp_path, "-static")
    assert interpreter(tmp_path / "script") is None and interpreter(static) is None
    assert interpreter(tmp_path / "missing") is None


def test_build_id_is_the_one_the_linker_wrote(tmp_path: Path) -> None:
    program = _linked(tmp_path, "-Wl,--build-id=0x0123456789abcdef")
    assert build_id(program) == "0123456789abcdef"
    assert build_id(_linked(tmp_path, "-Wl,--build-id=none")) is None
