"""One view of programs and libraries (oracle/run_view.py, issue 17, review 14): a run of the Python server sees the
frozen runtime's programs, libraries and standard library alone, under bubblewrap as under the Landlock fallback, so
whatever a library finds by looking (a module to import, a program on PATH, a C library by name) it finds the same in
both. Each test runs the same probe the way oracle/child.py starts the server (`frozen=True`, `private_tmp=False`)."""

import json

import pytest

from oracle.sandbox import Sandbox
from oracle.runtime import PYTHON
from tests.test_sandbox import _without_bwrap

# what a library may look for: the tools review 14 found under bubblewrap only (gcc, sort, python3, uname, date),
# the linker and ldconfig find_library runs, and the copy's own shell tools
TOOLS = ("gcc", "cc", "ld", "ldconfig", "sort", "python3", "uname", "date", "sh", "bash", "ls", "cat")
# the standard library's modules each found by its spec (nothing imported: no module's import-time effects), the
# answers of shutil.which and ctypes.util.find_library, and the three packages review 14 imported under bubblewrap only
_PROBE = r"""
import ctypes.util, importlib, importlib.util, json, os, shutil, sys
found = sorted(name for name in sys.stdlib_module_names if importlib.util.find_spec(name) is not None)
imported = {}
for name in ("test", "lib2to3", "ensurepip", "json", "zoneinfo", "ctypes"):
    try:
        importlib.import_module(name)
        imported[name] = True
    except ImportError:
        imported[name] = False
which = {tool: shutil.which(tool) for tool in TOOLS}
print(json.dumps({"found": found, "imported": imported, "which": which, "libc": ctypes.util.find_library("c"),
                  "path": os.environ.get("PATH")}))
""".replace("TOOLS", repr(TOOLS))


def _view(without_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict]:
    """The isolation the sandbox chose and what the probe saw in a run started as the Python server's is."""
    with monkeypatch.context() as patched:
        if without_bwrap:
            _without_bwrap(patched)
        with Sandbox() as box:
            done = box.run([PYTHON, "-I", "-B", "-c", _PROBE], timeout=60, private_tmp=False, frozen=True)
            assert done.status == 0, done.output
            seen = json.loads(done.output)
            # the copy's folder, as a message would spell it (oracle/run_view.py `spelled`): the same in both
            root = str(box.frozen_runtime().root)
            return box.isolation, json.loads(json.dumps(seen).replace(root, "/usr"))


def test_the_python_servers_run_sees_the_same_modules_and_programs_in_both_isolations(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The set of standard library modules found, whether test, lib2to3 and ensurepip import, what shutil.which
    answers for the host's tools and the copy's, and find_library("c"): the same under bubblewrap and without it."""
    first, bwrap = _view(False, monkeypatch)
    second, fallback = _view(True, monkeypatch)
    if first != "bubblewrap" or second == "bubblewrap":
        pytest.skip(f"needs a working bubblewrap and its fallback here (got {first}, {second})")
    for key in ("found", "imported", "which", "libc", "path"):
        assert bwrap[key] == fallback[key], f"{key}: bubblewrap {bwrap[key]!r}, fallback {fallback[key]!r}"
    # and the same because both see the copy alone: no host compiler, linker or coreutils beyond the copy's tools
    assert {tool for tool, path in bwrap["which"].items() if path} == {"sh", "bash", "ls", "cat"}, bwrap["which"]
    assert bwrap["imported"] == {"test": False, "lib2to3": False, "ensurepip": False, "json": True,
                                 "zoneinfo": True, "ctypes": True}
    assert bwrap["libc"] is None  # no ld.so.cache, gcc or ld in either view: find_library has nothing to ask
    assert "json" in bwrap["found"] and "test" not in bwrap["found"]
