"""A clean mutmut campaign over the Python engine, read back and checked against the triage file.

    result = run_campaign(find_checkout(Path.cwd()), jobs=2)
    print(render(result)); result.score >= 0.95

mutmut's configuration is in pyproject.toml ([tool.mutmut]); the triage of surviving mutants is in
mutation/equivalent.toml. mutmut is run as `python -m mutmut` with the interpreter running this code, in the
checkout's root, after removing any earlier `mutants/` (mutmut caches results there between runs).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oracle.family import MutationTarget

TRIAGE_FILE = Path("mutation") / "equivalent.toml"  # in the checkout: its triage matches its engine
PRAGMA = "# pragma: no mutate"
STAT_KEYS = ("killed", "timeout", "survived", "no_tests", "suspicious", "skipped", "segfault", "total")
_RESULT = re.compile(r"^\s*(\S+): (\S[^\n]*?)\s*$")


class CampaignError(Exception):
    """The campaign cannot run or its output cannot be read (a usage or setup problem, not a weak suite)."""


@dataclass(frozen=True, slots=True)
class Triage:
    """An equivalent mutant: its mutmut name, the line the mutant reads (to notice renumbering), and why."""

    name: str
    line: str
    reason: str


@dataclass(slots=True)
class Survivor:
    name: str
    diff: str
    triage: Triage | None = None


@dataclass(slots=True)
class CampaignResult:
    stats: dict[str, int]
    survivors: list[Survivor]
    seconds: float
    jobs: int
    stale_triage: list[str] = field(default_factory=list)  # triaged names that were killed or no longer exist
    target: str = "engine/"  # what was mutated, as the summary names it

    @property
    def score(self) -> float:
        """(killed + timeout) / (killed + timeout + survived); equivalent survivors count as survivors."""
        caught = self.stats["killed"] + self.stats["timeout"]
        tested = caught + self.stats["survived"]
        return caught / tested if tested else 0.0

    @property
    def equivalent(self) -> list[Survivor]:
        return [s for s in self.survivors if s.triage]

    @property
    def untriaged(self) -> list[Survivor]:
        return [s for s in self.survivors if not s.triage]

    @property
    def score_after_triage(self) -> float:
        """The same score with the triaged (equivalent) survivors left out of the denominator."""
        caught = self.stats["killed"] + self.stats["timeout"]
        tested = caught + self.stats["survived"] - len(self.equivalent)
        return caught / tested if tested else 0.0

    def as_dict(self, threshold: float) -> dict:
        return {
            "tool": "mutmut",
            "target": self.target,
            **self.stats,
            "score": round(self.score, 4),
            "score_after_triage": round(self.score_after_triage, 4),
            "threshold": threshold,
            "passed": self.passed(threshold),
            "equivalent": [{"name": s.name, "reason": s.triage.reason, "diff": s.diff} for s in self.equivalent],
            "untriaged_survivors": [{"name": s.name, "diff": s.diff} for s in self.untriaged],
            "stale_triage": self.stale_triage,
            "seconds": round(self.seconds, 1),
            "jobs": self.jobs,
        }

    def passed(self, threshold: float) -> bool:
        return self.score >= threshold and self.stats["no_tests"] == 0


def find_checkout(start: Path) -> Path:
    """The pagedcheck checkout holding `start` (its pyproject.toml names the project and configures mutmut)."""
    for directory in (start.resolve(), *start.resolve().parents):
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and (directory / "engine" / "llm_memory.py").is_file():
            try:
                config = tomllib.loads(pyproject.read_text())
            except (OSError, tomllib.TOMLDecodeError):
                continue
            if config.get("project", {}).get("name") == "pagedcheck" and "mutmut" in config.get("tool", {}):
                return directory
    raise CampaignError(f"{start} is not inside a pagedcheck checkout (run it where pyproject.toml configures mutmut)")


def _read_triage(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CampaignError(f"cannot read the triage file {path}: {exc}") from None


def load_triage(path: Path) -> dict[str, Triage]:
    """[equivalent] entries: "mutant name" = { line = "the mutated line", reason = "why no test can tell" }."""
    data = _read_triage(path)
    triage = {}
    for name, entry in data.get("equivalent", {}).items():
        if not isinstance(entry, dict) or not entry.get("reason") or not entry.get("line"):
            raise CampaignError(f"{path}: [equivalent] {name!r} needs a `line` and a `reason`")
        triage[name] = Triage(name, entry["line"], entry["reason"])
    return triage


def unlisted_pragmas(root: Path) -> list[str]:
    """Lines of the mutated sources carrying `# pragma: no mutate` without a [no_mutate] reason."""
    listed = _read_triage(root / TRIAGE_FILE).get("no_mutate", {})
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]
    found = []
    for source_path in config.get("source_paths", []):
        for path in sorted((root / source_path).rglob("*.py")):
            for line in path.read_text().splitlines():
                if PRAGMA in line:
                    key = f"{path.relative_to(root)}:{line.split(PRAGMA)[0].strip()}"
                    if key not in listed:
                        found.append(key)
    return found


def _mutmut(root: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "mutmut", *args]
    try:
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, errors="replace")
    except OSError as exc:
        raise CampaignError(f"cannot run mutmut: {exc}") from None
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        tail = "\n".join(out.replace("\r", "\n").strip().splitlines()[-15:])
        raise CampaignError(f"`mutmut {' '.join(args)}` exited {proc.returncode}:\n{tail}")
    return out


def read_stats(path: Path) -> dict[str, int]:
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CampaignError(f"cannot read mutmut's statistics {path}: {exc}") from None
    return {key: int(raw.get(key, 0)) for key in STAT_KEYS}


def parse_results(text: str) -> dict[str, str]:
    """`mutmut results --all true` lines, "name: status", as a dict."""
    return {m[1]: m[2] for line in text.splitlines() if (m := _RESULT.match(line)) and "__mutmut_" in m[1]}


def mutated_lines(diff: str) -> list[str]:
    return [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


def run_campaign(root: Path, jobs: int = 2, triage: dict[str, Triage] | None = None) -> CampaignResult:
    """Removes root/mutants, runs `mutmut run`, and reads back the statistics and every survivor's diff."""
    triage = load_triage(root / TRIAGE_FILE) if triage is None else triage
    shutil.rmtree(root / "mutants", ignore_errors=True)
    start = time.perf_counter()
    _mutmut(root, "run", "--max-children", str(jobs))
    seconds = time.perf_counter() - start
    _mutmut(root, "export-cicd-stats")
    stats = read_stats(root / "mutants" / "mutmut-cicd-stats.json")
    results = parse_results(_mutmut(root, "results", "--all", "true"))
    survivors = []
    for name, status in sorted(results.items()):
        if status != "survived":
            continue
        diff = _mutmut(root, "show", name).strip()
        entry = triage.get(name)
        if entry and entry.line.strip() not in mutated_lines(diff):
            entry = None  # renumbered: the name now points at another mutant, which needs its own look
        survivors.append(Survivor(name, diff, entry))
    surviving = {s.name for s in survivors if s.triage}
    stale = sorted(set(triage) - surviving)
    return CampaignResult(stats, survivors, seconds, jobs, stale)


_COPIED = ("pyproject.toml", "engine", "oracle", "mutation", "tests")


def run_target(root: Path, target: "MutationTarget", jobs: int = 2) -> CampaignResult:
    """A family's campaign: in the checkout itself when it uses the checkout's own [tool.mutmut], else in a
    copy of the checkout (under a temporary directory) whose pyproject.toml holds the family's table."""
    triage = load_triage(root / target.triage)
    if target.mutmut is None:
        result = run_campaign(root, jobs=jobs, triage=triage)
    else:
        with tempfile.TemporaryDirectory(prefix="pagedcheck-mutation-") as scratch:
            copy = Path(scratch)
            for name in _COPIED:
                source = root / name
                if source.is_dir():
                    shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", "mutants"))
                elif source.is_file():
                    shutil.copy2(source, copy / name)
            pyproject = copy / "pyproject.toml"
            pyproject.write_text(with_mutmut_table(pyproject.read_text(), target.mutmut))
            result = run_campaign(copy, jobs=jobs, triage=triage)
    result.target = target.label
    return result


def with_mutmut_table(pyproject: str, table: dict) -> str:
    """pyproject.toml's text with its [tool.mutmut] table replaced by `table` (strings and lists of strings)."""
    kept, skipping = [], False
    for line in pyproject.splitlines():
        if line.startswith("["):
            skipping = line.strip() == "[tool.mutmut]"
        if not skipping:
            kept.append(line)
    lines = ["[tool.mutmut]"] + [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    return "\n".join(kept + [""] + lines) + "\n"


def render(result: CampaignResult, threshold: float) -> str:
    s = result.stats
    lines = [
        f"mutmut on {result.target}: {s['total']} mutants in {result.seconds:.0f} s with {result.jobs} jobs",
        f"  killed {s['killed']}, timeout {s['timeout']}, survived {s['survived']} "
        f"({len(result.equivalent)} triaged equivalent), no tests {s['no_tests']}, suspicious {s['suspicious']}, "
        f"skipped {s['skipped']}, segfault {s['segfault']}",
        f"  score (killed + timeout) / (killed + timeout + survived) = {result.score:.4f} "
        f"(threshold {threshold}); {result.score_after_triage:.4f} without the equivalent ones",
    ]
    for survivor in result.equivalent:
        lines.append(f"  equivalent: {survivor.name}: {survivor.triage.reason}")
    for survivor in result.untriaged:
        lines += [f"\nSURVIVED (not triaged): {survivor.name}", survivor.diff]
    for name in result.stale_triage:
        lines.append(f"  note: triaged {name} did not survive this run (killed, renumbered or gone): update {TRIAGE_FILE}")
    if s["no_tests"]:
        lines.append(f"FAIL: {s['no_tests']} mutants are reached by no selected test")
    if result.score < threshold:
        lines.append(f"FAIL: score {result.score:.4f} < threshold {threshold}")
    if result.passed(threshold):
        lines.append("PASS")
    return "\n".join(lines)
