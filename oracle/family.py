"""What a allocator family plugs into the shared runner and CLI: its machine, its adapters, its repro text."""

import tomllib
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable

from oracle.stats import RunStats

AdapterFactory = Callable[[], Any]
DEFAULT_FAMILY = "hw3"  # what every command grades or fuzzes without --family


@dataclass(frozen=True)
class MutationTarget:
    """What `pagedcheck mutation --family NAME` mutates: `label` names it in the summary, `triage` is its
    equivalent-mutant file in the checkout, and `mutmut` the [tool.mutmut] table to run with (None: the
    checkout's own pyproject.toml; else the campaign runs in a copy of the checkout with this table). A family
    whose grader grades C solutions names its C reference: `mutation --c` grades mutants of it."""

    label: str
    triage: str
    mutmut: dict[str, Any] | None = None
    c_reference: Path | None = None  # the C solution `mutation --c` mutates by default (None: no C campaign)


@dataclass(frozen=True)
class Family:
    name: str
    summary: str
    machine_for: Callable[[AdapterFactory, RunStats], type]
    load_adapter: Callable[[str], AdapterFactory]  # raises ValueError with a one-line reason
    repro_preamble: Callable[[str], list[str]]  # the imports that make a printed program runnable
    default_impl: str = "engine"
    load_rubric: Callable[[Path | None], Any] | None = None  # its rubric at a path, or its default; RubricError
    # (a machine, what its implementation's observe just returned or None) -> its state as tables, (expected,
    # actual): the core replays a failing program and draws the page of its failing call from it (oracle/scene.py,
    # oracle/page_html.py)
    state_tables: Callable[[Any, Any], tuple] | None = None
    # the failing step its checks recorded themselves (a grade item's evidence, a fuzz run's failure) -> a Scene
    # (oracle/scene.py) of its state as tables, or None: the core draws it without replaying anything
    picture: Callable[[Any], Any] | None = None
    # grade(submission, rubric, out_dir, *, seed, timeout, on_item, budget, require_sandbox) -> GradeReport (budget:
    # the whole grade's time limit, oracle/run_cpu.py Budget);
    # raises oracle.grading.grader.GraderError when grading cannot start (a bad path, a kind it cannot grade)
    grade: Callable[..., Any] | None = None
    default_rubric: Path | None = None  # the shipped rubric, named in a report when grading cannot start
    mutation: MutationTarget | None = None  # its engine's mutation campaign
    describe_run: Callable[[RunStats], str] | None = None  # a line `fuzz` prints about a run's figures ("" for none)
    # the lines `fuzz` prints about a failure before the program for pagedcheck: its calls in the user's terms
    describe_failure: Callable[[BaseException | None, str], list[str]] | None = None
    languages: tuple[str, ...] = ()  # what `grade --lang` may name, when a folder's upload may be in several
    # one seed, one run wherever it starts: no constants drawn from the modules loaded (oracle/determinism.py);
    # hw3 keeps Hypothesis's default until its seed-dependent expectations are measured again
    fixed_constants: bool = False
    takes_site: bool = False  # its grade takes `site`, a folder of packages the submission needs (oracle/site.py)


def on_first_use(module: str, name: str) -> Callable[..., Any]:
    """`module`'s `name`, imported at its first call: a family's package stays light (its modules may need
    Hypothesis, gcc's or the sandbox's, or import the package's FAMILY themselves)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(import_module(module), name)(*args, **kwargs)

    return call


def draws_page(family: Family) -> bool:
    """Whether `fuzz --html` and `grade --out` can picture the family's failures."""
    return family.picture is not None or family.state_tables is not None


def family_named(name: str) -> Family:
    """The registered family `name`; ValueError with a one-line reason naming the known ones."""
    known = families()
    if name not in known:
        raise ValueError(f"unknown family {name!r}; known: {', '.join(known)}")
    return known[name]


GROUP = "pagedcheck.families"


def families() -> dict[str, Family]:
    """Every family registered under the entry-point group `pagedcheck.families`, by name.

    A checkout run without installing (no metadata) reads the same table from its pyproject.toml."""
    registered = {entry.name: entry.value for entry in entry_points(group=GROUP)} or _from_pyproject()
    found = {}
    for value in registered.values():
        module, _, attr = value.partition(":")
        family = getattr(import_module(module), attr)
        found[family.name] = family
    return dict(sorted(found.items()))


def _from_pyproject() -> dict[str, str]:
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    table = tomllib.loads(pyproject.read_text()).get("project", {}).get("entry-points", {})
    return dict(table.get(GROUP, {}))
