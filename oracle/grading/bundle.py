"""`pagedcheck gradescope-bundle`: a Gradescope autograder zip that installs and runs this very pagedcheck.

The zip holds, at its top level (Gradescope's layout):

    setup.sh          run once when Gradescope builds the image: apt packages, then pagedcheck from the zip
    run_autograder    run per submission: /autograder/submission -> /autograder/results/results.json
    pagedcheck-<version>-py3-none-any.whl   this checkout, built when the bundle is made
    requirements.txt  the Python packages pagedcheck needs, pinned to the versions installed here
    rubric.toml       the rubric to grade with (validated before the bundle is written)
    programs/         the program files beside a course's rubric (programs/*.txt), which its items may name
    grade-options     more `pagedcheck grade` options, one a line (--time-limit, --require-sandbox)

The scripts are oracle/grading/gradescope_bundle/; both honour PAGEDCHECK_AUTOGRADER_ROOT.
"""

import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).with_name("gradescope_bundle")
_SOURCES = ("pyproject.toml", "README.md", "engine", "oracle", "mutation")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class BundleError(Exception):
    """The bundle cannot be made; the message says why in one line."""


def pins(distribution: str = "pagedcheck") -> list[str]:
    """`name==version` for every package `distribution` needs to run, transitively, as installed here;
    environment markers are kept, optional extras left out."""
    lines, seen, todo = [], {distribution.lower()}, [distribution]
    while todo:
        for requirement in metadata.requires(todo.pop()) or []:
            spec, _, marker = requirement.partition(";")
            if "extra" in marker:
                continue
            match = _NAME.match(spec.strip())
            if match is None or match.group().lower() in seen:
                continue
            name = match.group()
            seen.add(name.lower())
            try:
                pinned = f"{name}=={metadata.version(name)}"
            except metadata.PackageNotFoundError:
                continue  # not needed on this Python (its marker says so)
            lines.append(pinned + (f"; {marker.strip()}" if marker.strip() else ""))
            todo.append(name)
    return sorted(lines, key=str.lower)


def build_wheel(into: Path) -> Path:
    """A wheel of this checkout (the files as they are now), built by pip in a copy of the sources."""
    if not (PROJECT / "pyproject.toml").is_file():
        raise BundleError(f"needs a pagedcheck source checkout (no pyproject.toml in {PROJECT})")
    with tempfile.TemporaryDirectory(prefix="pagedcheck-wheel-") as scratch:
        source = Path(scratch) / "src"
        source.mkdir()
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
        for name in _SOURCES:
            path = PROJECT / name
            if path.is_dir():
                shutil.copytree(path, source / name, ignore=ignore)
            elif path.is_file():
                shutil.copy2(path, source / name)
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--no-input",
                               "--wheel-dir", str(into), str(source)], capture_output=True, text=True)
        wheels = sorted(into.glob("pagedcheck-*.whl"))
        if done.returncode != 0 or not wheels:
            lines = [line for line in done.stderr.splitlines() if line.strip() and "is ignored" not in line]
            raise BundleError(f"pip could not build the pagedcheck wheel: {(lines or ['no output'])[-1].strip()}")
    return wheels[-1]


def write_bundle(out: Path, rubric: Path, grade_options: list[str]) -> list[str]:
    """Writes the zip to `out` (through a temporary file beside it); returns the names it holds."""
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as bundle, \
                tempfile.TemporaryDirectory(prefix="pagedcheck-bundle-") as scratch:
            wheel = build_wheel(Path(scratch))
            files: dict[str, tuple[bytes, int]] = {
                "setup.sh": ((SCRIPTS / "setup.sh").read_bytes(), 0o755),
                "run_autograder": ((SCRIPTS / "run_autograder").read_bytes(), 0o755),
                wheel.name: (wheel.read_bytes(), 0o644),
                "requirements.txt": (("\n".join(pins()) + "\n").encode(), 0o644),
                "rubric.toml": (rubric.read_bytes(), 0o644),
                "grade-options": ("".join(f"{option}\n" for option in grade_options).encode(), 0o644),
            }
            if PROJECT / "oracle" not in rubric.resolve().parents:  # a course's: the programs its items may name
                files |= {f"programs/{path.name}": (path.read_bytes(), 0o644)
                          for path in sorted(rubric.parent.glob("programs/*.txt"))}
            for name, (data, mode) in files.items():
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (0o100000 | mode) << 16  # a regular file with these permissions
                info.compress_type = zipfile.ZIP_DEFLATED
                bundle.writestr(info, data)
        tmp.replace(out)
    except OSError as exc:
        raise BundleError(f"cannot write {out}: {exc.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return list(files)
