"""The shared layer names no family (issue 9): `hw3` appears in oracle/runner.py, oracle/cli.py, the CLI's
commands (oracle/commands/), oracle/grading/ and the shared difference, finding, program, serve loop and child
process only inside help text (a `help=` or `description=` argument); nor does the machinery that runs a C
submission (oracle/native/); and the shared target loader (oracle/target.py), which every family's Python
adapters use."""

import ast
from pathlib import Path

import pytest

from oracle.target import load_target

ROOT = Path(__file__).resolve().parents[1]
SHARED = [ROOT / "oracle" / "runner.py", ROOT / "oracle" / "cli.py",
          *(ROOT / "oracle" / f"{name}.py" for name in ("difference", "finding", "program", "serve", "served", "child",
                                                        "handed", "checked", "block_tables", "kv_worker", "table_machine", "step_strategy",
                                                        "vllm_wheel")),
          *sorted((ROOT / "oracle" / "commands").glob("*.py")), *sorted((ROOT / "oracle" / "grading").glob("*.py")),
          *sorted((ROOT / "oracle" / "native").glob("*.py"))]


def help_lines(source: str) -> set[int]:
    """The lines of every `help=` and `description=` argument's value."""
    return {line for node in ast.walk(ast.parse(source)) if isinstance(node, ast.keyword)
            and node.arg in ("help", "description") for line in range(node.value.lineno, node.value.end_lineno + 1)}


def family_names_outside_help(source: str) -> list[tuple[int, str]]:
    """(line number, line) of every line naming hw3 outside help text."""
    allowed = help_lines(source)
    return [(number, line.strip()) for number, line in enumerate(source.splitlines(), 1)
            if "hw3" in line.lower() and number not in allowed]


def test_the_shared_layer_names_no_family_outside_help_text() -> None:
    assert len(SHARED) >= 10 and all(path.is_file() for path in SHARED)
    assert ROOT / "oracle" / "native" / "ledger.py" in SHARED
    hits = [(str(path.relative_to(ROOT)), *hit)
            for path in SHARED for hit in family_names_outside_help(path.read_text())]
    assert hits == []


def test_a_family_named_in_code_is_found_and_help_text_is_not() -> None:
    source = ('p.add_argument("--impl", help="hw3: a C file"\n    " or a module")\n'
              'from oracle.HW3 import load_adapter\nif family.name == "hw3":\n    pass\n')
    assert family_names_outside_help(source) == [(3, "from oracle.HW3 import load_adapter"),
                                                 (4, 'if family.name == "hw3":')]


def test_load_target_imports_a_file_by_path_with_its_folder_on_the_path(tmp_path: Path) -> None:
    """`path/name.py[:attr]` loads that file (the modules beside it importable); a missing file or attribute is
    a one-line ValueError."""
    (tmp_path / "helper_for_target.py").write_text("VALUE = 41\n")
    (tmp_path / "my_target.py").write_text("from helper_for_target import VALUE\n\nclass Pool:\n    size = VALUE + 1\n")
    assert load_target(f"{tmp_path / 'my_target.py'}:Pool").size == 42
    with pytest.raises(ValueError, match="no such file"):
        load_target(str(tmp_path / "absent.py"))
    with pytest.raises(ValueError, match="has no attribute 'Nope'"):
        load_target(f"{tmp_path / 'my_target.py'}:Nope")


def test_no_two_families_share_an_aspect_name():
    """Wordings are registered by aspect name for the whole process: an aspect one family words and another uses
    plainly would reword the other's differences (blockspace's "contents" once prefixed hw3's)."""
    from oracle.blockspace.rules import ASPECTS as BLOCKSPACE
    from oracle.hw3.difference import FACTS as HW3
    from oracle.prefix.difference import ASPECTS as PREFIX

    families = {"hw3": set(HW3), "prefix": set(PREFIX), "blockspace": set(BLOCKSPACE)}
    for name, aspects in families.items():
        for other, theirs in families.items():
            assert name == other or not aspects & theirs, (name, other, aspects & theirs)


def test_the_shared_layer_imports_no_family():
    """No module of the shared layer imports a family's package, at its top or inside a function."""
    families = {path.name for path in (ROOT / "oracle").iterdir() if (path / "rubric.toml").is_file()}
    assert {"hw3", "prefix", "blockspace"} <= families
    imported = [(str(path.relative_to(ROOT)), name) for path in SHARED for node in ast.walk(ast.parse(path.read_text()))
                for name in ([node.module or ""] if isinstance(node, ast.ImportFrom) else
                             [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
                if name.split(".")[:2] in (["oracle", family] for family in families)]
    assert imported == []
