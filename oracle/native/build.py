"""Builds a C submission into a driver program, inside the sandbox (oracle/sandbox.py), against a family's facts
(BuildFacts: its source file's name, its official header, the course's flags, its API and its driver).

The submission is compiled alone, with exactly the course's flags, in a sandbox that sees only a copy of its
source and a private folder holding the official header (never the submission's own header, never our
reference solution or any other file of ours), so every warning it gets is its own and `#include` can reach
nothing of ours. The object is then refused if it could go around the grader's accounting or speak to valgrind
(refusal.py). The driver is compiled separately, from our own source, and linked (in the sandbox too); it
defines the malloc family itself, so it sees every allocation the process makes. Linked programs are cached
by content, by the refusal rules, by the family's facts and by the sandbox's isolation (a build made under one
isolation is never reused under another) in the private build cache (build_cache.py).

The official compile alone decides whether the build is `ok`. When it fails and the same compile without
-Werror succeeds (the submission only has warnings), that object is linked too, as `lenient_driver`, so that
grading can go on: the "compiles" item fails with the official output, the others are graded on that build.
"""

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from oracle.elf_interp import padded, system_loader
from oracle.native.build_cache import digest, evict, private_cache, publish
from oracle.native.refusal import refusal
from oracle.native.upload import submission_source
from oracle.sandbox import Limits, Sandbox, shared

COMPILE_TIMEOUT = 60.0
GCC_LIMITS = Limits(cpu_seconds=60, memory_bytes=1 << 30, file_bytes=64 << 20, processes=32, tmp_bytes=256 << 20)

# the driver's machinery every family's driver.c includes (driver_heap.c first, driver_main.c last), from this folder
DRIVER_CORE = (Path(__file__).with_name("driver_heap.c"), Path(__file__).with_name("driver_main.c"))
_UNDEFINED = re.compile(r"undefined reference to [`'‘\"]([^'’`\"]+)['’\"]")
_TWICE = re.compile(r"multiple definition of [`'‘\"]([^'’`\"]+)['’\"]")


@dataclass(frozen=True)
class BuildFacts:
    """What a family graded in C gives the build: the file a submission is (`source_name`), the official header
    (the only one its compile sees), the course's flags, the API (the submission's global symbols the driver
    calls: every other one is made local), and the family's driver: its main source (compiled with `driver_flags`,
    the header's folder on its include path) and every file that source includes (`driver_parts`, for the
    cache's key)."""

    source_name: str
    header: Path
    official_flags: tuple[str, ...]
    api: tuple[str, ...]
    driver: Path
    driver_parts: tuple[Path, ...]
    driver_flags: tuple[str, ...]

    @property
    def lenient_flags(self) -> tuple[str, ...]:
        """The course's flags without -Werror: warnings stay warnings."""
        return tuple(flag for flag in self.official_flags if flag != "-Werror")


@dataclass(frozen=True, slots=True)
class BuildResult:
    ok: bool
    driver: Path | None  # the linked driver program, when ok
    stage: str  # "compile" or "link" when the build failed there, "done" when ok
    log: str  # everything gcc and the linker printed
    missing_symbols: tuple[str, ...] = ()
    lenient_driver: Path | None = None  # when not ok: the driver built without -Werror, if that succeeds
    lenient_log: str = ""  # what the compile and link without -Werror printed
    facts: BuildFacts = field(kw_only=True)  # the family's, which the build was made against

    @property
    def flags(self) -> tuple[str, ...]:
        """The flags the driver that grading uses was compiled with."""
        return self.facts.official_flags if self.ok else self.facts.lenient_flags

    @property
    def graded_driver(self) -> Path | None:
        """The driver that grading uses: the official build, or the one without -Werror (None: neither)."""
        return self.driver if self.ok else self.lenient_driver

    @property
    def defined_twice(self) -> tuple[str, ...]:
        """The symbols the link found defined twice: in the submission's source and in the grader's driver."""
        return tuple(dict.fromkeys(_TWICE.findall(self.log))) if self.stage == "link" else ()

    @property
    def defines_main(self) -> bool:
        """The link failed because the submission defines main(), which the grader's driver defines."""
        return "main" in self.defined_twice

    @property
    def verdict(self) -> str:
        """What is wrong with the build, in one line a student can act on ("built" when nothing is)."""
        if self.ok:
            return "built"
        name, flags = self.facts.source_name, " ".join(self.facts.official_flags)
        if self.defines_main:
            where = self._main_at()
            return f"{name} defines main(){f' (line {where.group(1)})' if where else ''}: remove main(): " \
                   "the grader links its own"
        if self.defined_twice:
            return f"{name} defines {', '.join(self.defined_twice)}, which the grader's driver defines: " \
                   "remove it (the library defines only the spec's calls and its own static helpers)"
        if self.missing_symbols:
            return f"link failed: undefined symbols {', '.join(self.missing_symbols)}"
        first = _first_problem(self.shown_log)
        if self.stage == "link":
            return f"linking {name} with the grader failed: {first}"
        if self.lenient_driver is not None:  # only warnings: the spec's -Werror makes each one an error
            return f"gcc {flags} -c {name} warns, and the spec treats warnings as errors (-Werror): {first}"
        return f"gcc {flags} -c {name} failed: {first}"

    @property
    def shown_log(self) -> str:
        """What the compiler and linker printed, as a student may read it: for a second main() only the
        submission's own line (the rest names the grader's files)."""
        if self.defines_main:
            where = self._main_at()
            return f"{self.facts.source_name}:{where.group(1)}: main() is defined here\n" if where else ""
        # the driver's lines name its files, not our paths
        return self.log.replace(f"{self.facts.driver.parent}/", "").replace(f"{DRIVER_CORE[0].parent}/", "")

    @property
    def message(self) -> str:
        """One line for a report, then the compiler's output."""
        return self.verdict if self.ok else f"{self.verdict}\n{self.shown_log}"

    def _main_at(self) -> re.Match[str] | None:
        """Where the submission's main() is, in the log."""
        return re.search(rf"{re.escape(self.facts.source_name)}:(\d+)", self.log)


def _first_problem(log: str) -> str:
    """The compiler's first error line, else its first warning line, else its first line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for word in ("error", "warning"):
        found = next((line for line in lines if word in line), None)
        if found:
            return found
    return lines[0] if lines else "no output"


def _driver_object(workdir: Path, facts: BuildFacts) -> Path:
    """driver.o, compiled once per driver and header version, from our own source (not sandboxed)."""
    header = facts.header.read_bytes()
    parts = (*facts.driver_parts, *DRIVER_CORE)
    key = digest(*(part.read_bytes() for part in parts), header, " ".join(facts.driver_flags).encode())
    obj = workdir / f"driver-{key}.o"
    if not obj.exists():
        tmp = workdir / f"driver-{key}.{os.getpid()}.o"
        include = ("-I", str(facts.header.parent), "-I", str(DRIVER_CORE[0].parent))
        proc = subprocess.run(["gcc", *facts.driver_flags, *include, "-c", str(facts.driver), "-o", str(tmp)],
                              capture_output=True, text=True, errors="replace", timeout=COMPILE_TIMEOUT)
        if proc.returncode != 0:
            raise RuntimeError(f"the pagedcheck driver does not compile:\n{proc.stdout + proc.stderr}")
        publish(tmp, obj)
    return obj


def gcc(box: Sandbox, header: Path, files: dict[str, bytes], args: Sequence[str], output: str,
        objects: Sequence[Path] = ()) -> tuple[Path | None, str]:
    """Runs `gcc args -o output` in the sandbox, in a fresh folder holding `files` (name -> content), with
    include/ holding the official `header` and nothing else; `objects` of ours are visible read-only. The output
    file (None if gcc failed) and everything gcc printed, with the sandbox's paths shown as the file names."""
    sources = box.area("gcc-in")
    (sources / "include").mkdir()
    shutil.copyfile(header, sources / "include" / header.name)
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


def _compile_and_link(box: Sandbox, facts: BuildFacts, source: bytes, flags: Sequence[str], driver_obj: Path,
                      program: Path) -> tuple[str, str, tuple[str, ...]]:
    """Compiles the submission with `flags` and links it with the driver into `program`: the stage reached
    ("compile", "link" or "done"), what gcc printed, and the undefined symbols the linker named. Under the
    official flags any output at all fails the compile."""
    name = facts.source_name
    obj, log = gcc(box, facts.header, {name: source}, [*flags, "-c", name], f"{Path(name).stem}.o")
    if obj is None or (flags == facts.official_flags and log.strip()):
        return "compile", log, ()
    if reason := refusal(box, obj, source, facts.header, name):
        return "compile", reason + "\n", ()
    obj = _sealed(box, obj, driver_obj, facts.api)
    # the system's loader, padded: under the Landlock fallback the sandbox points it at its frozen copy's
    # (oracle/elf_interp.py), so that the driver's process runs the driver's own file, through no host file
    linked, link_log = gcc(box, facts.header, {}, [f"-Wl,--dynamic-linker={padded(system_loader())}"], "driver",
                           objects=[obj, driver_obj])
    if linked is None:
        return "link", log + link_log, tuple(dict.fromkeys(_UNDEFINED.findall(link_log)))
    program.parent.mkdir(parents=True, exist_ok=True)
    tmp = program.with_name(f"{program.name}.{os.getpid()}")
    shutil.copyfile(linked, tmp)
    tmp.chmod(0o755)
    publish(tmp, program)
    return "done", log + link_log, ()


def _sealed(box: Sandbox, obj: Path, driver_obj: Path, api: Sequence[str]) -> Path:
    """The submission's object with every global symbol made local but the `api`'s and the names the driver
    defines itself. The driver shares the submission's process: a function of the submission's named like one
    of the C library's that the driver calls (read, write, memcpy) would otherwise take the driver's calls and
    rewrite its requests or replies. Its own code still calls its own functions; a name the driver defines
    (main, malloc) stays global, so the link refuses the clash with the submission's reason."""
    keep = sorted({*api, *_defined(driver_obj)})
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


def build(facts: BuildFacts, submission_path: Path | str, workdir: Path | str | None = None,
          sandbox: Sandbox | None = None) -> BuildResult:
    """Compile and link a submission (its source file, or a directory holding one) against the family's `facts`, in
    the sandbox; the programs go to the private cache `workdir` (default: the per-user one)."""
    source = submission_source(submission_path, facts.source_name)
    workdir = private_cache(Path(workdir) if workdir is not None else None)
    box = sandbox or shared()
    driver_obj = _driver_object(workdir, facts)
    content = source.read_bytes()
    recipe = " ".join([*facts.official_flags, "|", *facts.lenient_flags]).encode()  # a cached build knows of the fallback
    # a cached build was refused, sealed and linked by these rules, with this API kept: they are part of its key
    # (the driver's sources, the header and the flags are already: driver_obj's name, recipe)
    rules = Path(refusal.__code__.co_filename).read_bytes() + Path(__file__).read_bytes() + \
        " ".join([facts.source_name, *facts.api]).encode()
    out = workdir / f"build-{digest(content, driver_obj.name.encode(), recipe, rules, box.isolation.encode())}"
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
            facts=facts,
        )
    out.mkdir(parents=True, exist_ok=True)
    stage, log, missing = _compile_and_link(box, facts, content, facts.official_flags, driver_obj, out / "driver")
    if stage == "done":
        result = BuildResult(True, out / "driver", "done", log, facts=facts)
    elif stage == "link":
        result = BuildResult(False, None, "link", log, missing, facts=facts)
    else:
        result = BuildResult(False, None, "compile", log, facts=facts)
        lenient = out / "lenient" / "driver"
        lenient_stage, lenient_log, _ = _compile_and_link(box, facts, content, facts.lenient_flags, driver_obj, lenient)
        if lenient_stage == "done":
            result = BuildResult(False, None, "compile", log, lenient_driver=lenient, lenient_log=lenient_log, facts=facts)
    tmp_json = out / f"result.{os.getpid()}.json"
    tmp_json.write_text(
        json.dumps({"ok": result.ok, "stage": result.stage, "log": result.log, "missing_symbols": result.missing_symbols,
                    "lenient": result.lenient_driver is not None, "lenient_log": result.lenient_log})
    )
    publish(tmp_json, cached)
    evict(workdir, keep=out)
    return result
