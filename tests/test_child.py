"""oracle/child.py: a Python submission's messages name no path of the grader's, and read the same with bubblewrap
and without it (oracle/run_view.py `spelled`)."""

import os
from pathlib import Path

import pytest

from oracle import isolation, landlock
from oracle.child import LoadFailure
from oracle.hw3.pyremote import served
from oracle.sandbox import Sandbox

# at import: an error naming its own file, the standard library's, the time zone database it read and the
# temporary folder it may not write (no folder under either isolation)
NAMES_ITS_PATHS = """
import os, tempfile, zoneinfo
try:
    tempfile.gettempdir()
except FileNotFoundError as no_folder:
    unwritable = str(no_folder)
raise RuntimeError(" ".join([__file__, os.__file__, str(zoneinfo.TZPATH), unwritable]))
"""


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_load_error_names_no_path_of_the_graders(without_bwrap: bool, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    if without_bwrap:
        if not landlock.abi_version():
            pytest.skip("this kernel has no Landlock")
        monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
        monkeypatch.setattr(isolation, "_probed", {})
    (tmp_path / "names_its_paths.py").write_text(NAMES_ITS_PATHS)
    with Sandbox() as box:
        assert box.isolation == ("landlock" if without_bwrap else "bubblewrap")
        with pytest.raises(LoadFailure) as failed:
            with served(str(tmp_path / "names_its_paths.py"), sandbox=box):
                pass
        root = str(box.root)
    said = str(failed.value)
    assert root not in said and "pagedcheck" not in said, said
    stdlib = f"/usr/lib/{os.path.basename(os.path.realpath('/usr/bin/python3'))}"
    assert said == (f"RuntimeError: ./names_its_paths.py {stdlib}/os.py ('/usr/share/zoneinfo',) [Errno 2] No usable "
                    "temporary directory found in ['/tmp', '/var/tmp', '/usr/tmp', '.']"), said
