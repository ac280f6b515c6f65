"""Finding a Python submission by its files (oracle/pylocate.py): where it is, which files its child
process gets, and a one-line reason for what is not there. Nothing here is imported."""

import sys
from pathlib import Path

import pytest

from oracle.pylocate import locate


@pytest.fixture
def root(tmp_path: Path):
    """tmp_path on sys.path, with: lone_mod.py (imports helper_mod and json), helper_mod.py, unused_mod.py,
    a package pkg_here/ (sub/memory.py imports pkg_other), pkg_other/, and a link out of the root."""
    (tmp_path / "lone_mod.py").write_text("import json\nfrom helper_mod import x\n")
    (tmp_path / "helper_mod.py").write_text("x = 1\n")
    (tmp_path / "unused_mod.py").write_text("y = 2\n")
    (tmp_path / "pkg_here" / "sub").mkdir(parents=True)
    (tmp_path / "pkg_here" / "__init__.py").write_text("")
    (tmp_path / "pkg_here" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg_here" / "sub" / "memory.py").write_text("def f():\n    import pkg_other.deep\n")
    (tmp_path / "pkg_here" / "broken.py").write_text("def (:\n")  # does not parse: imports nothing
    (tmp_path / "pkg_other").mkdir()
    (tmp_path / "pkg_other" / "deep.py").write_text("")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.py"
    outside.write_text("secret = 1\n")
    (tmp_path / "pkg_here" / "leak.py").symlink_to(outside)
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))


def test_a_module_brings_what_it_imports_from_its_root(root: Path) -> None:
    target = locate("lone_mod:impl")
    assert (target.root, target.module, target.attr) == (root, "lone_mod", "impl")
    assert sorted(target.files) == ["helper_mod.py", "lone_mod.py"]  # not unused_mod.py, not json


def test_a_package_module_brings_its_package_and_its_imports_but_no_link_out(root: Path) -> None:
    target = locate("pkg_here.sub.memory")
    assert target.root == root and target.module == "pkg_here.sub.memory"
    assert sorted(target.files) == ["pkg_here/__init__.py", "pkg_here/broken.py", "pkg_here/sub/__init__.py",
                                    "pkg_here/sub/memory.py", "pkg_other/deep.py"]
    assert locate("pkg_here.sub").module == "pkg_here.sub"  # a package is its __init__.py


def test_a_file_is_its_own_module(root: Path) -> None:
    target = locate(str(root / "helper_mod.py"))
    assert (target.root, target.module, target.files) == (root, "helper_mod.py", ("helper_mod.py",))


@pytest.mark.parametrize("spec, reason", [
    ("lone_mod:not-a-name", "'not-a-name' is not an attribute name"),
    ("lone mod", "'lone mod' is not a module name (pkg.module) or a .py file"),
    ("no_such_top_level_thing", "cannot find module 'no_such_top_level_thing'"),
    ("lone_mod.inner", "cannot find module 'lone_mod.inner': 'lone_mod' is not a package"),
    ("pkg_here.nothing", "cannot find module 'pkg_here.nothing'"),
    ("pkg_here.sub.memory.deeper", "cannot find module 'pkg_here.sub.memory.deeper'"),
    ("sys", "'sys' is built-in, not Python source"),
])
def test_what_is_not_a_python_file_is_one_line(root: Path, spec: str, reason: str) -> None:
    with pytest.raises(ValueError) as refused:
        locate(spec)
    assert str(refused.value) == reason


def test_missing_and_misnamed_files(root: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        locate(str(root / "absent.py"))
    (root / "not-a-name.py").write_text("")
    with pytest.raises(ValueError, match="not a module name"):
        locate(str(root / "not-a-name.py"))


def test_imports_are_read_as_text_never_parsed(root: Path) -> None:
    """A source built to choke a parser (a million open brackets) is only read: the names of its import
    statements, at a line's start or after `;` or `:`, are found all the same, and the call returns."""
    (root / "bomb_mod.py").write_bytes(b"x = " + b"(" * 1_000_000 + b"\nif 1: import helper_mod as h, pkg_other\n"
                                       b"y = 1; from unused_mod import y\n")
    assert sorted(locate("bomb_mod").files) == ["bomb_mod.py", "helper_mod.py", "pkg_other/deep.py", "unused_mod.py"]


def test_a_module_file_that_is_a_link_to_a_classmates_is_refused(tmp_path: Path) -> None:
    """grade-all's folder a-alice holds only block_manager.py -> ../z-bob/block_manager.py: not Bob's upload."""
    (tmp_path / "z-bob").mkdir()
    (tmp_path / "z-bob" / "block_manager.py").write_text("class BlockSpaceManager: pass\n")
    (tmp_path / "a-alice").mkdir()
    (tmp_path / "a-alice" / "block_manager.py").symlink_to(Path("..") / "z-bob" / "block_manager.py")
    with pytest.raises(ValueError, match="block_manager.py: a symbolic link, not a file of the folder"):
        locate(str(tmp_path / "a-alice" / "block_manager.py"))
    target = locate(str(tmp_path / "z-bob" / "block_manager.py"))  # Bob's own file is his
    assert (target.root, target.files) == ((tmp_path / "z-bob").resolve(), ("block_manager.py",))


def test_a_package_whose_init_is_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "__init__.py").write_text("")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "__init__.py").symlink_to(tmp_path / "theirs" / "__init__.py")
    with pytest.raises(ValueError, match="__init__.py is a symbolic link"):
        locate(str(tmp_path / "mine"))
