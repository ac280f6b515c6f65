"""oracle/child.py: a Python submission's messages name no path of the grader's, and read the same with bubblewrap
and without it (oracle/run_view.py `spelled`)."""

import os
from pathlib import Path

import pytest

from oracle import isolation, landlock
from oracle.child import LoadFailure
from oracle.hw3.pyremote import served
from oracle.sandbox import Sandbox

# at import: a file of its own in the temporary folder, then an error naming that folder, its own file, the standard
# library's and the time zone database it read
NAMES_ITS_PATHS = """
import os, tempfile, zoneinfo
with open(os.path.join(tempfile.gettempdir(), "debug.log"), "w") as log:
    log.write("loaded")
raise RuntimeError(" ".join([log.name, __file__, os.__file__, str(zoneinfo.TZPATH)]))
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
    assert said == f"RuntimeError: /tmp/debug.log ./names_its_paths.py {stdlib}/os.py ('/usr/share/zoneinfo',)", said
