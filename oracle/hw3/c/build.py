"""Builds a C submission into a driver program, inside the sandbox (oracle/sandbox.py).

The submission is compiled alone, with exactly the course's flags, in a sandbox that sees only a copy of its
llm_memory.c and a private folder holding the official header (never the submission's own header, never our
reference solution or any other file of ours), so every warning it gets is its own and `#include` can reach
nothing of ours. The object is then refused if it could go around the grader's accounting or speak to valgrind
(refusal.py). The driver is compiled separately, from our own source, and linked (in the sandbox too); it
defines the malloc family itself, so it sees every allocation the process makes. Linked programs are cached
by content in a private folder (mode 0700, its owner checked), which no sandboxed code can see.

The official compile alone decides whether the build is `ok`. When it fails and the same compile without
-Werror succeeds (the submission only has warnings), that object is linked too, as `lenient_driver`, so that
grading can go on: the "compiles" item fails with the official output, the others are graded on that build.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from oracle.hw3.c.refusal import refusal
from oracle.sandbox import Limits, Sandbox, shared

HEADER_DIR = Path(__file__).resolve().parents[3] / "engine" / "c"  # the official header; our driver's -I
HEADER = HEADER_DIR / "llm_memory.h"
DRIVER_SOURCE = Path(__file__).with_name("driver.c")
DRIVER_PARTS = (DRIVER_SOURCE, DRIVER_SOURCE.with_name("driver_probes.c"))  # driver.c includes the others
OFFICIAL_FLAGS = ("-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2", "-ggdb")
LENIENT_FLAGS = tuple(flag for flag in OFFICIAL_FLAGS if flag != "-Werror")  # warnings stay warnings
DRIVER_FLAGS = ("-std=gnu11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2", "-ggdb")
SOURCE_NAME = "llm_memory.c"
COMPILE_TIMEOUT = 60.0
GCC_LIMITS = Limits(cpu_seconds=60, memory_bytes=1 << 30, file_bytes=64 << 20, processes=32, tmp_bytes=256 << 20)

_UNDEFINED = re.compile(r"undefined reference to [`'‘\"]([^'’`\"]+)['’\"]")


@dataclass(frozen=True, slots=True)
class BuildResult:
    ok: bool
    driver: Path | None  # the linked driver program, when ok
    stage: str  # "compile" or "link" when the build failed there, "done" when ok
    log: str  # everything gcc and the linker printed
    missing_symbols: tuple[str, ...] = ()
    lenient_driver: Path | None = None  # when not ok: the driver built without -Werror, if that succeeds
    lenient_log: str = ""  # what the compile and link without -Werror printed

    @property
    def flags(self) -> tuple[str, ...]:
        """The flags the driver that grading uses was compiled with."""
        return OFFICIAL_FLAGS if self.ok else LENIENT_FLAGS

    @property
    def graded_driver(self) -> Path | None:
        """The driver that grading uses: the official build, or the one without -Werror (None: neither)."""
        return self.driver if self.ok else self.lenient_driver

    @property
    def message(self) -> str:
        """One line for a report, then the compiler's output."""
        if self.ok:
            return "built"
        if self.missing_symbols:
            return f"link failed: undefined symbols {', '.join(self.missing_symbols)}\n{self.log}"
        return f"{self.stage} failed:\n{self.log}"


class Refused(ValueError):
    """The submission is refused before it is built (a symbolic link, a file outside it): its own fault."""


def submission_source(path: Path | str) -> Path:
    """The llm_memory.c a path names: the file itself, or the one inside a directory. Refuses (Refused) a
    llm_memory.c that is a symbolic link or lies outside the submission directory."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ValueError(f"submission {path} does not exist")
    source = path / SOURCE_NAME if path.is_dir() else path
    if path.is_dir() and not source.exists() and not source.is_symlink():
        raise ValueError(f"submission directory {path} has no {SOURCE_NAME}")
    if not path.is_dir() and path.suffix != ".c":
        raise ValueError(f"submission {path} is neither a .c file nor a directory")
    if source.is_symlink():
        raise Refused(f"{SOURCE_NAME} is a symbolic link (to {os.readlink(source)}): submit the file itself")
    if path.is_dir() and source.resolve().parent != path.resolve():
        raise Refused(f"{SOURCE_NAME} resolves outside the submission directory")
    if not source.is_file():
        raise Refused(f"{SOURCE_NAME} is not a regular file")
    return source


def private_cache(path: Path | None = None) -> Path:
    """The build cache: `path`, or one per user under $XDG_CACHE_HOME (~/.cache). Created with mode 0700;
    refused (RuntimeError) when another user owns it or others may write into it, since a program found
    there is run."""
    if path is None:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        path = base / "pagedcheck" / "build"
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.lstat()
    if path.is_symlink() or info.st_uid != os.geteuid():
        raise RuntimeError(f"build cache {path} is not owned by this user: refusing to run programs from it")
    if info.st_mode & 0o022:
        raise RuntimeError(f"build cache {path} is writable by other users: refusing to run programs from it")
    return path


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()[:20]


def _publish(tmp: Path, final: Path) -> None:
    os.replace(tmp, final)  # atomic, so concurrent builds never see half a file


def _driver_object(workdir: Path) -> Path:
    """driver.o, compiled once per driver and header version, from our own source (not sandboxed)."""
    header = HEADER.read_bytes()
    key = _digest(*(part.read_bytes() for part in DRIVER_PARTS), header, " ".join(DRIVER_FLAGS).encode())
    obj = workdir / f"driver-{key}.o"
    if not obj.exists():
        tmp = workdir / f"driver-{key}.{os.getpid()}.o"
        proc = subprocess.run(["gcc", *DRIVER_FLAGS, "-I", str(HEADER_DIR), "-c", str(DRIVER_SOURCE), "-o", str(tmp)],
                              capture_output=True, text=True, errors="replace", timeout=COMPILE_TIMEOUT)
        if proc.returncode != 0:
            raise RuntimeError(f"the pagedcheck driver does not compile:\n{proc.stdout + proc.stderr}")
        _publish(tmp, obj)
    return obj


def gcc(box: Sandbox, files: dict[str, bytes], args: Sequence[str], output: str,
        objects: Sequence[Path] = ()) -> tuple[Path | None, str]:
    """Runs `gcc args -o output` in the sandbox, in a fresh folder holding `files` (name -> content), with
    include/ holding the official header and nothing else; `objects` of ours are visible read-only. The output
    file (None if gcc failed) and everything gcc printed, with the sandbox's paths shown as the file names."""
    sources = box.area("gcc-in")
    (sources / "include").mkdir()
    shutil.copyfile(HEADER, sources / "include" / "llm_memory.h")
    for name, content in files.items():
        (sources / name).write_bytes(content)
    out = box.area("gcc-out")  # writable: passed among the run's writable paths
    exposed = [box.expose(obj) for obj in objects]
    cmd = ["gcc", *args, *map(str, exposed), "-I", "include", "-o", str(out / output)]
    done = box.run(cmd, cwd=sources, readable=[sources, *exposed], writable=[out], timeout=COMPILE_TIMEOUT,
                   limits=GCC_LIMITS)
    if done.output.startswith("bwrap: "):  # the sandbox did not start gcc: ours to fix, never the submission's
        raise RuntimeError(f"the sandbox cannot run gcc: {done.output.splitlines()[0]}")
    log = re.sub(rf"{re.escape(str(box.root))}/[^/\s]+/", "", done.output)  # our folders, as plain file names
    if done.status is None:
        log += f"\ngcc was stopped after {COMPILE_TIMEOUT:g} s"
    elif done.status < 0:
        log += f"\ngcc was stopped by {done.signal_name} (its limits: {GCC_LIMITS.memory_bytes >> 20} MiB, " \
               f"{GCC_LIMITS.cpu_seconds} s of CPU)"
    result = out / output
    return (result if done.status == 0 and result.is_file() else None), log


def _compile_and_link(box: Sandbox, source: bytes, flags: Sequence[str], driver_obj: Path,
                      program: Path) -> tuple[str, str, tuple[str, ...]]:
    """Compiles the submission with `flags` and links it with the driver into `program`: the stage reached
    ("compile", "link" or "done"), what gcc printed, and the undefined symbols the linker named. Under the
    official flags any output at all fails the compile."""
    obj, log = gcc(box, {SOURCE_NAME: source}, [*flags, "-c", SOURCE_NAME], "llm_memory.o")
    if obj is None or (flags == OFFICIAL_FLAGS and log.strip()):
        return "compile", log, ()
    if reason := refusal(box, obj, source, HEADER, SOURCE_NAME):
        return "compile", reason + "\n", ()
    linked, link_log = gcc(box, {}, [], "driver", objects=[obj, driver_obj])
    if linked is None:
        return "link", log + link_log, tuple(dict.fromkeys(_UNDEFINED.findall(link_log)))
    program.parent.mkdir(parents=True, exist_ok=True)
    tmp = program.with_name(f"{program.name}.{os.getpid()}")
    shutil.copyfile(linked, tmp)
    tmp.chmod(0o755)
    _publish(tmp, program)
    return "done", log + link_log, ()


def build(submission_path: Path | str, workdir: Path | str | None = None, sandbox: Sandbox | None = None) -> BuildResult:
    """Compile and link a submission (an llm_memory.c, or a directory holding one) in the sandbox; the
    programs go to the private cache `workdir` (default: the per-user one)."""
    source = submission_source(submission_path)
    workdir = private_cache(Path(workdir) if workdir is not None else None)
    box = sandbox or shared()
    driver_obj = _driver_object(workdir)
    content = source.read_bytes()
    recipe = " ".join([*OFFICIAL_FLAGS, "|", *LENIENT_FLAGS]).encode()  # a cached build knows of the fallback
    refusal_rules = Path(refusal.__code__.co_filename).read_bytes()  # a cached build was refused by these rules
    out = workdir / f"build-{_digest(content, driver_obj.name.encode(), recipe, refusal_rules)}"
    cached = out / "result.json"
    if cached.exists():
        data = json.loads(cached.read_text())
        return BuildResult(
            ok=data["ok"],
            driver=out / "driver" if data["ok"] else None,
            stage=data["stage"],
            log=data["log"],
            missing_symbols=tuple(data["missing_symbols"]),
            lenient_driver=out / "lenient" / "driver" if data.get("lenient") else None,
            lenient_log=data.get("lenient_log", ""),
        )
    out.mkdir(parents=True, exist_ok=True)
    stage, log, missing = _compile_and_link(box, content, OFFICIAL_FLAGS, driver_obj, out / "driver")
    if stage == "done":
        result = BuildResult(True, out / "driver", "done", log)
    elif stage == "link":
        result = BuildResult(False, None, "link", log, missing)
    else:
        result = BuildResult(False, None, "compile", log)
        lenient_stage, lenient_log, _ = _compile_and_link(box, content, LENIENT_FLAGS, driver_obj, out / "lenient" / "driver")
        if lenient_stage == "done":
            result = BuildResult(False, None, "compile", log, lenient_driver=out / "lenient" / "driver", lenient_log=lenient_log)
    tmp_json = out / f"result.{os.getpid()}.json"
    tmp_json.write_text(
        json.dumps({"ok": result.ok, "stage": result.stage, "log": result.log, "missing_symbols": result.missing_symbols,
                    "lenient": result.lenient_driver is not None, "lenient_log": result.lenient_log})
    )
    _publish(tmp_json, cached)
    return result
