"""The HTML picture of a failing step in a real browser: Debian's chromium, headless, loads the page of a
300-block pool and a 4096-record sequence without a console error, its dumped DOM holds the grids' cells,
and its screenshot is not blank. Skipped when chromium is absent, unless CI=true (.ci/run installs it)."""

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.test_page import big_page, parse, part, rows

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/run installs it: apt-get install -y chromium)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return path


def browse(chromium: str, page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [chromium, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def scanlines(png: bytes) -> list[bytes]:
    """A PNG's scanlines as stored (filtered, one filter byte each): enough to tell a uniform image, whose
    rows can take only a handful of forms whatever the filters, from a drawn one."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, data = 8, b""
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at : at + 8])
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", png[at + 8 : at + 18])
        elif kind == b"IDAT":
            data += png[at + 8 : at + 8 + length]
        at += 12 + length
    assert depth == 8 and color in (2, 6)
    stride = 1 + width * (3 if color == 2 else 4)
    raw = zlib.decompress(data)
    assert len(raw) == stride * height
    return [raw[i : i + stride] for i in range(0, len(raw), stride)]


def test_chromium_loads_the_page_and_draws_the_grids(chromium: str, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(big_page())
    dumped = browse(chromium, page, tmp_path / "profile", "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    errors = [line for line in dumped.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert not errors, errors
    (failure,) = parse(dumped.stdout).all("section", "failure")
    pool = rows(part(failure, "Pool"))
    assert set(pool) == {"block 0", "block 262"} and all(len(cells) == 32 for cells in pool.values())
    assert sum("diff" in c.classes for cells in pool.values() for c in cells) == 2 * 17  # each side's 17 slots
    seq2 = rows(part(failure, "Block table of seq 2"))
    assert list(seq2) == ["kv_count", "L1[15]"] and len(seq2["L1[15]"]) == 32
    shot = tmp_path / "page.png"
    drawn = browse(chromium, page, tmp_path / "profile", "--hide-scrollbars", "--window-size=1400,1600",
                   f"--screenshot={shot}")
    assert drawn.returncode == 0 and shot.is_file(), drawn.stderr[-2000:]
    lines = scanlines(shot.read_bytes())
    assert len(lines) == 1600 and len(set(lines)) > 200  # text and grids, not one colour
