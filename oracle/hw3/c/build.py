"""HW3's C build: the course's facts (its header, flags and API, and our driver for them), given to the core's
build (oracle/native/build.py: compiled alone in the sandbox, refused, sealed, linked, cached)."""

from pathlib import Path

from oracle.native.build import BuildFacts, BuildResult, build as build_against
from oracle.native.upload import submission_source as source_in
from oracle.hw3.spec import API
from oracle.sandbox import Sandbox

HEADER_DIR = Path(__file__).resolve().parents[3] / "engine" / "c"  # the official header; our driver's -I
HEADER = HEADER_DIR / "llm_memory.h"
DRIVER_SOURCE = Path(__file__).with_name("driver.c")
SOURCE_NAME = "llm_memory.c"
OFFICIAL_FLAGS = ("-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2", "-ggdb")  # the spec's
FACTS = BuildFacts(
    source_name=SOURCE_NAME,
    header=HEADER,
    official_flags=OFFICIAL_FLAGS,
    api=API,
    driver=DRIVER_SOURCE,
    driver_parts=(DRIVER_SOURCE, DRIVER_SOURCE.with_name("driver_probes.c")),  # driver.c includes the other (and the core's)
    driver_flags=("-std=gnu11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2", "-ggdb"),
)


def build(submission_path: Path | str, workdir: Path | str | None = None, sandbox: Sandbox | None = None) -> BuildResult:
    """Compile and link a submission (an llm_memory.c, or a directory holding one) with our driver, in the sandbox;
    the programs go to the private cache `workdir` (default: the per-user one)."""
    return build_against(FACTS, submission_path, workdir, sandbox)


def submission_source(path: Path | str) -> Path:
    """The llm_memory.c a path names (oracle/native/upload.py)."""
    return source_in(path, SOURCE_NAME)
