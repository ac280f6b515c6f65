"""Builds a C submission into a driver program, inside the sandbox (oracle/sandbox.py).

The submission is compiled alone, with exactly the course's flags, in a sandbox that sees only a copy of its
llm_memory.c and a private folder holding the official header (never the submission's own header, never our
reference solution or any other file of ours), so every warning it gets is its own and `#include` can reach
nothing of ours. The object is then refused if it could go around the grader's accounting or speak to valgrind
(refusal.py). The driver is compiled separately, from our own source, and linked (in the sandbox too); it
defines the malloc family itself, so it sees every allocation the process makes. Linked programs are cached
by content, by the refusal rules and by the sandbox's isolation (a build made under one isolation is never
reused under another) in a private folder (mode 0700, its owner checked), which no sandboxed code can see.
The cache is bounded (CACHE_BYTES, CACHE_ENTRIES): each new build evicts the least recently used ones beyond
the bound, sparing those used in the last IN_USE_SECONDS (a grading running beside this one may be using them).

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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from oracle.elf_interp import padded, system_loader
from oracle.native.refusal import refusal
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

CACHE_BYTES = 512 << 20  # the build cache's bound, in bytes and in builds
CACHE_ENTRIES = 500
IN_USE_SECONDS = 900.0

_UNDEFINED = re.compile(r"undefined reference to [`'‘\"]([^'’`\"]+)['’\"]")
_TWICE = re.compile(r"multiple definition of [`'‘\"]([^'’`\"]+)['’\"]")
_MAIN_AT = re.compile(rf"{re.escape(SOURCE_NAME)}:(\d+)")  # where the submission's main() is
_HIDDEN = ("__MACOSX",)  # folders an upload carries that are not the student's (hidden ones are skipped too)
_WALK_LIMIT = 10_000  # entries looked at when searching an upload for its llm_memory.c


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
    def defined_twice(self) -> tuple[str, ...]:
        """The symbols the link found defined twice: in llm_memory.c and in the grader's driver."""
        return tuple(dict.fromkeys(_TWICE.findall(self.log))) if self.stage == "link" else ()

    @property
    def defines_main(self) -> bool:
        """The link failed because llm_memory.c defines main(), which the grader's driver defines."""
        return "main" in self.defined_twice

    @property
    def verdict(self) -> str:
        """What is wrong with the build, in one line a student can act on ("built" when nothing is)."""
        if self.ok:
            return "built"
        if self.defines_main:
            where = _MAIN_AT.search(self.log)
            return f"{SOURCE_NAME} defines main(){f' (line {where.group(1)})' if where else ''}: remove main(): " \
                   "the grader links its own"
        if self.defined_twice:
            return f"{SOURCE_NAME} defines {', '.join(self.defined_twice)}, which the grader's driver defines: " \
                   "remove it (the library defines only the spec's calls and its own static helpers)"
        if self.missing_symbols:
            return f"link failed: undefined symbols {', '.join(self.missing_symbols)}"
        first = _first_problem(self.shown_log)
        if self.stage == "link":
            return f"linking {SOURCE_NAME} with the grader failed: {first}"
        if self.lenient_driver is not None:  # only warnings: the spec's -Werror makes each one an error
            return f"gcc {' '.join(OFFICIAL_FLAGS)} -c {SOURCE_NAME} warns, and the spec treats warnings as " \
                   f"errors (-Werror): {first}"
        return f"gcc {' '.join(OFFICIAL_FLAGS)} -c {SOURCE_NAME} failed: {first}"

    @property
    def shown_log(self) -> str:
        """What the compiler and linker printed, as a student may read it: for a second main() only the
        submission's own line (the rest names the grader's files)."""
        if self.defines_main:
            where = _MAIN_AT.search(self.log)
            return f"{SOURCE_NAME}:{where.group(1)}: main() is defined here\n" if where else ""
        return self.log.replace(f"{DRIVER_SOURCE.parent}/", "")  # the driver's lines name its file, not our path

    @property
    def message(self) -> str:
        """One line for a report, then the compiler's output."""
        return self.verdict if self.ok else f"{self.verdict}\n{self.shown_log}"


def _first_problem(log: str) -> str:
    """The compiler's first error line, else its first warning line, else its first line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for word in ("error", "warning"):
        found = next((line for line in lines if word in line), None)
        if found:
            return found
    return lines[0] if lines else "no output"


class Refused(ValueError):
    """The submission is refused before it is built (no llm_memory.c, a symbolic link, a file outside it): its
    own fault, graded 0 with the reason."""


def submission_source(path: Path | str) -> Path:
    """The llm_memory.c a path names: the file itself, or the one inside a directory: at its top, else the only
    llm_memory.c in its folders (an upload of a folder), as Gradescope's run_autograder finds it. A directory
    without one (an empty upload, a name in another case, several copies) is refused (Refused) naming what was
    expected and what was uploaded; so is an llm_memory.c that is a symbolic link or lies outside the
    directory. A path that does not exist, or a file that is not .c, is the caller's mistake (ValueError)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ValueError(f"submission {path} does not exist")
    if not path.is_dir() and path.suffix != ".c":
        raise ValueError(f"submission {path} is neither a .c file nor a directory")
    source = path / SOURCE_NAME if path.is_dir() else path
    if path.is_dir() and not source.exists() and not source.is_symlink():
        source = only_file_below(path, SOURCE_NAME)
    if source.is_symlink():
        raise Refused(f"{SOURCE_NAME} is a symbolic link (to {os.readlink(source)}): submit the file itself")
    if path.is_dir() and not source.resolve().is_relative_to(path.resolve()):
        raise Refused(f"{SOURCE_NAME} resolves outside the submission directory")
    if not source.is_file():
        raise Refused(f"{SOURCE_NAME} is not a regular file")
    return source


def only_file_below(folder: Path, wanted: str) -> Path:
    """The one file named `wanted` (llm_memory.c, llm_memory.py) in the folders of an upload (hidden ones and
    links to folders not entered); Refused, naming what the upload holds, when there is none or more than one."""
    found, uploaded, seen, hidden = [], [], 0, 0
    for top, dirs, files in os.walk(folder):
        kept = sorted(d for d in dirs if not d.startswith(".") and d not in _HIDDEN)
        hidden += len(dirs) - len(kept)
        dirs[:] = kept
        for name in sorted(files):
            relative = _shown(str((Path(top) / name).relative_to(folder)))
            if name == wanted:
                found.append(relative)
            elif not name.startswith("."):  # .DS_Store and the like: not what the student meant to upload
                uploaded.append(relative)
            else:
                hidden += 1
        seen += len(files) + len(dirs)
        if seen > _WALK_LIMIT:
            break
    if len(found) == 1:
        return folder / found[0]
    expected = f"expected a file named {wanted} (that name exactly)"
    if found:
        raise Refused(f"the upload holds {len(found)} files named {wanted} ({', '.join(found[:5])}): "
                      f"{expected}, once")
    if not uploaded:
        what = "holds only hidden files and folders" if hidden else "is empty"
        raise Refused(f"no {wanted} was uploaded: {expected}; the upload {what}")
    near = [name for name in uploaded if Path(name).name.lower() == wanted and Path(name).name != wanted]
    listed = ", ".join(uploaded[:8]) + (f" and {len(uploaded) - 8} more" if len(uploaded) > 8 else "")
    hint = f" ({near[0]} differs in case: rename it {wanted})" if near else ""
    raise Refused(f"no {wanted} was uploaded: {expected}; the upload holds {listed}{hint}")


def _shown(name: str) -> str:
    """A file name as a message shows it: quoted when it holds characters a terminal would act on."""
    return name if name.isprintable() else repr(name)


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
    obj = _sealed(box, obj, driver_obj)
    # the system's loader, padded: under the Landlock fallback the sandbox points it at its frozen copy's
    # (oracle/elf_interp.py), so that the driver's process runs the driver's own file, through no host file
    linked, link_log = gcc(box, {}, [f"-Wl,--dynamic-linker={padded(system_loader())}"], "driver",
                           objects=[obj, driver_obj])
    if linked is None:
        return "link", log + link_log, tuple(dict.fromkeys(_UNDEFINED.findall(link_log)))
    program.parent.mkdir(parents=True, exist_ok=True)
    tmp = program.with_name(f"{program.name}.{os.getpid()}")
    shutil.copyfile(linked, tmp)
    tmp.chmod(0o755)
    _publish(tmp, program)
    return "done", log + link_log, ()


API = ("llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")


def _sealed(box: Sandbox, obj: Path, driver_obj: Path) -> Path:
    """The submission's object with every global symbol made local but the API's and the names the driver
    defines itself. The driver shares the submission's process: a function of the submission's named like one
    of the C library's that the driver calls (read, write, memcpy) would otherwise take the driver's calls and
    rewrite its requests or replies. Its own code still calls its own functions; a name the driver defines
    (main, malloc) stays global, so the link refuses the clash with the submission's reason."""
    keep = sorted({*API, *_defined(driver_obj)})
    out = box.area("sealed")
    exposed = box.expose(obj)
    done = box.run(["objcopy", *(f"--keep-global-symbol={name}" for name in keep), str(exposed),
                    str(out / obj.name)], readable=[exposed.parent], writable=[out], timeout=COMPILE_TIMEOUT,
                   limits=GCC_LIMITS)
    if done.status != 0 or not (out / obj.name).is_file():
        raise RuntimeError(f"objcopy failed on the submission's object: {done.output[-300:]}")
    return out / obj.name


def _defined(driver_obj: Path) -> list[str]:
    """The global symbols our driver's object defines (our own object: read here)."""
    listed = subprocess.run(["nm", "-P", "--defined-only", "--extern-only", str(driver_obj)], capture_output=True,
                            text=True, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.split()]


def build(submission_path: Path | str, workdir: Path | str | None = None, sandbox: Sandbox | None = None) -> BuildResult:
    """Compile and link a submission (an llm_memory.c, or a directory holding one) in the sandbox; the
    programs go to the private cache `workdir` (default: the per-user one)."""
    source = submission_source(submission_path)
    workdir = private_cache(Path(workdir) if workdir is not None else None)
    box = sandbox or shared()
    driver_obj = _driver_object(workdir)
    content = source.read_bytes()
    recipe = " ".join([*OFFICIAL_FLAGS, "|", *LENIENT_FLAGS]).encode()  # a cached build knows of the fallback
    # a cached build was refused, sealed and linked by these rules: they are part of its key
    rules = Path(refusal.__code__.co_filename).read_bytes() + Path(__file__).read_bytes()
    out = workdir / f"build-{_digest(content, driver_obj.name.encode(), recipe, rules, box.isolation.encode())}"
    cached = out / "result.json"
    if cached.exists():
        os.utime(out)  # its last use, for eviction
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
    evict(workdir, keep=out)
    return result


def _size(folder: Path) -> int:
    return sum(path.lstat().st_size for path in folder.rglob("*") if not path.is_dir())


def evict(workdir: Path, *, keep: Path | None = None, max_bytes: int = CACHE_BYTES, max_entries: int = CACHE_ENTRIES,
          in_use: float = IN_USE_SECONDS) -> list[Path]:
    """Removes the least recently used builds (a build's folder time is its last use) until the cache holds
    at most `max_bytes` and `max_entries`, never `keep` nor a build used in the last `in_use` s; the builds
    removed, oldest first."""
    builds = []
    for folder in workdir.glob("build-*"):
        try:
            builds.append((folder.stat().st_mtime, folder, _size(folder)))
        except OSError:  # removed by a grading beside this one
            continue
    builds.sort(key=lambda build: build[0])
    total, count, now, removed = sum(size for _, _, size in builds), len(builds), time.time(), []
    for used, folder, size in builds:
        if total <= max_bytes and count <= max_entries:
            break
        if folder == keep or now - used < in_use:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        total, count = total - size, count - 1
        removed.append(folder)
    return removed
