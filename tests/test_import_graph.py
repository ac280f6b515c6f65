"""The import graph of pagedcheck's own modules (issue 19): no import circles, counting imports made inside a
function or under TYPE_CHECKING too (a deferred import is still an arrow a reader must follow back), and engine/
imports nothing from oracle/."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that `path` imports anywhere in its text: `from a.b import c` is a.b.c when that is a
    module of ours, else a.b."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                      for alias in node.names}
    return {name for name in found if name in known}


def graph(root: Path) -> dict[str, set[str]]:
    paths = [path for folder in ("oracle", "engine") for path in (root / folder).rglob("*.py")
             if "__pycache__" not in path.parts]
    known = {module_name(path, root) for path in paths}
    return {module_name(path, root): imports(path, known) - {module_name(path, root)} for path in paths}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_oracle_or_engine_is_in_an_import_circle() -> None:
    edges = graph(ROOT)
    assert len(edges) > 100
    assert circles(edges) == []


def test_a_circle_made_by_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    (tmp_path / "oracle" / "fam").mkdir(parents=True)
    (tmp_path / "engine").mkdir()
    (tmp_path / "oracle" / "__init__.py").write_text("")
    (tmp_path / "oracle" / "fam" / "__init__.py").write_text("")
    (tmp_path / "oracle" / "fam" / "a.py").write_text("from oracle.fam.b import thing\n")
    (tmp_path / "oracle" / "fam" / "b.py").write_text("def thing():\n    from oracle.fam import c\n")
    (tmp_path / "oracle" / "fam" / "c.py").write_text("import oracle.fam.a\n")
    (tmp_path / "oracle" / "fam" / "d.py").write_text("from oracle.fam.a import x\n")
    assert circles(graph(tmp_path)) == [["oracle.fam.a", "oracle.fam.b", "oracle.fam.c"]]


def test_engine_imports_nothing_from_oracle() -> None:
    edges = graph(ROOT)
    assert {name: sorted(used) for name, used in edges.items()
            if name.startswith("engine") and any(u.startswith("oracle") for u in used)} == {}
