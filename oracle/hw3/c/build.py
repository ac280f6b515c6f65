"""Builds a C submission into a driver program.

The submission is compiled alone, with exactly the course's flags, against our header (never its own), so
every warning it gets is its own. The driver is compiled separately and linked with malloc, calloc, realloc
and free wrapped, so that the driver sees every allocation. Results are cached by content hash in workdir.

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

HEADER_DIR = Path(__file__).resolve().parents[3] / "engine" / "c"
DRIVER_SOURCE = Path(__file__).with_name("driver.c")
OFFICIAL_FLAGS = ("-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2", "-ggdb")
LENIENT_FLAGS = tuple(flag for flag in OFFICIAL_FLAGS if flag != "-Werror")  # warnings stay warnings
DRIVER_FLAGS = ("-std=gnu11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2", "-ggdb")
WRAP = "-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free"
SOURCE_NAME = "llm_memory.c"
COMPILE_TIMEOUT = 120.0

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
    def message(self) -> str:
        """One line for a report, then the compiler's output."""
        if self.ok:
            return "built"
        if self.missing_symbols:
            return f"link failed: undefined symbols {', '.join(self.missing_symbols)}\n{self.log}"
        return f"{self.stage} failed:\n{self.log}"


def submission_source(path: Path | str) -> Path:
    """The llm_memory.c a path names: the file itself, or the one inside a directory."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"submission {path} does not exist")
    if path.is_dir():
        source = path / SOURCE_NAME
        if not source.is_file():
            raise ValueError(f"submission directory {path} has no {SOURCE_NAME}")
        return source
    if path.suffix != ".c":
        raise ValueError(f"submission {path} is neither a .c file nor a directory")
    return path


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()[:20]


def _run(cmd: list[str], cwd: Path) -> tuple[int, str]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=COMPILE_TIMEOUT)
    return proc.returncode, proc.stdout + proc.stderr


def _publish(tmp: Path, final: Path) -> None:
    os.replace(tmp, final)  # atomic, so concurrent builds never see half a file


def _driver_object(workdir: Path) -> Path:
    """driver.o, compiled once per driver and header version."""
    header = (HEADER_DIR / "llm_memory.h").read_bytes()
    key = _digest(DRIVER_SOURCE.read_bytes(), header, " ".join(DRIVER_FLAGS).encode())
    obj = workdir / f"driver-{key}.o"
    if not obj.exists():
        tmp = workdir / f"driver-{key}.{os.getpid()}.o"
        code, log = _run(["gcc", *DRIVER_FLAGS, "-I", str(HEADER_DIR), "-c", str(DRIVER_SOURCE), "-o", str(tmp)], workdir)
        if code != 0:
            raise RuntimeError(f"the pagedcheck driver does not compile:\n{log}")
        _publish(tmp, obj)
    return obj


def _link(directory: Path, driver_obj: Path, program: Path) -> tuple[Path | None, str, tuple[str, ...]]:
    """Links directory/llm_memory.o with the driver into `program`: the program (None when the link fails),
    what the linker printed, and the undefined symbols it named."""
    tmp = program.with_name(f"{program.name}.{os.getpid()}")
    code, link_log = _run(["gcc", "llm_memory.o", str(driver_obj), "-o", str(tmp), WRAP], directory)
    if code != 0:
        return None, link_log, tuple(dict.fromkeys(_UNDEFINED.findall(link_log)))
    _publish(tmp, program)
    return program, link_log, ()


def build(submission_path: Path | str, workdir: Path | str) -> BuildResult:
    """Compile and link a submission (an llm_memory.c, or a directory holding one) into workdir."""
    source = submission_source(submission_path)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    driver_obj = _driver_object(workdir)
    recipe = " ".join([*OFFICIAL_FLAGS, "|", *LENIENT_FLAGS]).encode()  # a cached build knows of the fallback
    out = workdir / f"build-{_digest(source.read_bytes(), driver_obj.name.encode(), recipe)}"
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

    src = out / "src"  # the source alone: a header beside the submission must not shadow ours
    src.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, src / SOURCE_NAME)
    code, log = _run(["gcc", *OFFICIAL_FLAGS, "-I", str(HEADER_DIR), "-c", SOURCE_NAME, "-o", "llm_memory.o"], src)
    if code != 0 or log.strip():
        result = BuildResult(False, None, "compile", log)
        lenient = out / "lenient"
        lenient.mkdir(exist_ok=True)
        shutil.copyfile(source, lenient / SOURCE_NAME)
        code, lenient_log = _run(
            ["gcc", *LENIENT_FLAGS, "-I", str(HEADER_DIR), "-c", SOURCE_NAME, "-o", "llm_memory.o"], lenient
        )
        if code == 0:
            linked, link_log, _ = _link(lenient, driver_obj, lenient / "driver")
            lenient_log += link_log
            if linked is not None:
                result = BuildResult(False, None, "compile", log, lenient_driver=linked, lenient_log=lenient_log)
    else:
        linked, link_log, missing = _link(src, driver_obj, out / "driver")
        if linked is None:
            result = BuildResult(False, None, "link", link_log, missing)
        else:
            result = BuildResult(True, linked, "done", log + link_log)
    tmp_json = out / f"result.{os.getpid()}.json"
    tmp_json.write_text(
        json.dumps({"ok": result.ok, "stage": result.stage, "log": result.log, "missing_symbols": result.missing_symbols,
                    "lenient": result.lenient_driver is not None, "lenient_log": result.lenient_log})
    )
    _publish(tmp_json, cached)
    return result
