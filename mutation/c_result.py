"""What a C mutation campaign (mutation/c_campaign.py) found: each graded mutant's outcome, the triage of the
survivors that are equivalent (mutation/c_equivalent.toml), the score, and its report in text and JSON."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mutation.c_mutants import OPERATORS, Mutant

TRIAGE_FILE = Path(__file__).with_name("c_equivalent.toml")


class CampaignError(Exception):
    """The campaign cannot run (no gcc, the original does not compile, a bad triage file)."""


@dataclass(frozen=True, slots=True)
class Triage:
    id: str
    line: str
    reason: str


@dataclass(slots=True)
class Outcome:
    """What grading one mutant gave."""

    mutant: Mutant
    status: str  # killed, timeout, survived, error
    item: str = ""  # the first item that failed (killed), or the one that broke (error)
    points: float = 0.0  # that item's points in the rubric
    message: str = ""
    pass_: str = "quick"  # "quick" or "full": which grading decided
    seconds: float = 0.0
    triage: Triage | None = None


@dataclass(slots=True)
class CampaignResult:
    target: str
    generated: list[Mutant]
    not_compiling: list[Mutant]
    identical: list[Mutant]
    outcomes: list[Outcome]
    seconds: float
    jobs: int
    stale_triage: list[str] = field(default_factory=list)

    def _with(self, *statuses: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in statuses]

    @property
    def killed(self) -> list[Outcome]:
        return self._with("killed", "timeout")

    @property
    def survivors(self) -> list[Outcome]:
        return self._with("survived")

    @property
    def equivalent(self) -> list[Outcome]:
        return [o for o in self.survivors if o.triage]

    @property
    def untriaged(self) -> list[Outcome]:
        return [o for o in self.survivors if not o.triage]

    @property
    def errors(self) -> list[Outcome]:
        return self._with("error")

    @property
    def score(self) -> float:
        """killed / (killed + untriaged survivors + grader errors)."""
        killed = len(self.killed)
        tested = killed + len(self.untriaged) + len(self.errors)
        return killed / tested if tested else 0.0

    def passed(self, threshold: float) -> bool:
        return self.score >= threshold

    def as_dict(self, threshold: float) -> dict[str, Any]:
        by_item: dict[str, int] = {}
        for o in self.killed:
            by_item[o.item or o.status] = by_item.get(o.item or o.status, 0) + 1
        operators = {op: {"generated": 0, "not_compiling": 0, "identical_object": 0, "killed": 0, "survived": 0,
                          "equivalent": 0, "error": 0} for op in OPERATORS}
        for m in self.generated:
            operators[m.operator]["generated"] += 1
        for m in self.not_compiling:
            operators[m.operator]["not_compiling"] += 1
        for m in self.identical:
            operators[m.operator]["identical_object"] += 1
        for o in self.outcomes:
            key = {"timeout": "killed", "survived": "equivalent" if o.triage else "survived"}.get(o.status, o.status)
            operators[o.mutant.operator][key] += 1
        return {
            "tool": "pagedcheck-c-mutation",
            "target": self.target,
            "generated": len(self.generated),
            "not_compiling": len(self.not_compiling),
            "identical_object": len(self.identical),
            "graded": len(self.outcomes),
            "killed": len(self.killed),
            "timeout": len(self._with("timeout")),
            "killed_by_zero_point_items_only": sum(o.points == 0 and o.status == "killed" for o in self.killed),
            "survived": len(self.survivors),
            "equivalent_triaged": len(self.equivalent),
            "untriaged_survivors_count": len(self.untriaged),
            "errors": len(self.errors),
            "non_equivalent": len(self.killed) + len(self.untriaged) + len(self.errors),
            "score": round(self.score, 4),
            "threshold": threshold,
            "passed": self.passed(threshold),
            "killed_by_item": dict(sorted(by_item.items(), key=lambda kv: -kv[1])),
            "operators": operators,
            "equivalent": [{"id": m.id, "reason": "identical object code", "diff": m.diff} for m in self.identical]
            + [{"id": o.mutant.id, "reason": o.triage.reason, "diff": o.mutant.diff} for o in self.equivalent],
            "untriaged_survivors": [{"id": o.mutant.id, "diff": o.mutant.diff} for o in self.untriaged],
            "grader_errors": [{"id": o.mutant.id, "item": o.item, "message": o.message, "diff": o.mutant.diff}
                              for o in self.errors],
            "kills": [{"id": o.mutant.id, "status": o.status, "item": o.item, "pass": o.pass_,
                       "seconds": round(o.seconds, 2), "message": o.message[:300]} for o in self.killed],
            "not_compiling_ids": [m.id for m in self.not_compiling],
            "stale_triage": self.stale_triage,
            "seconds": round(self.seconds, 1),
            "jobs": self.jobs,
        }


def load_triage(path: Path = TRIAGE_FILE) -> dict[str, Triage]:
    """[equivalent] "mutant id" = { line = "the mutated line, as the diff shows it after +", reason = "..." }"""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CampaignError(f"cannot read the triage file {path}: {exc}") from None
    triage = {}
    for mutant_id, entry in data.get("equivalent", {}).items():
        if not isinstance(entry, dict) or not entry.get("line") or not entry.get("reason"):
            raise CampaignError(f"{path}: [equivalent] {mutant_id!r} needs a `line` and a `reason`")
        triage[mutant_id] = Triage(mutant_id, entry["line"].strip(), entry["reason"])
    return triage


def render(result: CampaignResult, threshold: float) -> str:
    d = result.as_dict(threshold)
    lines = [
        f"C mutants of {result.target}: {d['generated']} generated in {result.seconds:.0f} s with {result.jobs} jobs",
        f"  not compiling {d['not_compiling']}, equivalent (identical object code) {d['identical_object']}, "
        f"graded {d['graded']}",
        f"  killed {d['killed']} (of which time-outs {d['timeout']}, by zero-point items only "
        f"{d['killed_by_zero_point_items_only']}), survived {d['survived']} ({d['equivalent_triaged']} triaged "
        f"equivalent), grader errors {d['errors']}",
        "  killed by: " + ", ".join(f"{k} {v}" for k, v in d["killed_by_item"].items()),
        f"  score killed / (killed + untriaged survivors + errors) = {result.score:.4f} (threshold {threshold})",
    ]
    for o in result.equivalent:
        lines.append(f"  equivalent: {o.mutant.id}: {o.triage.reason}")
    for o in result.errors:
        lines += [f"\nGRADER ERROR: {o.mutant.id} ({o.item or 'outside any item'}): {o.message}", o.mutant.diff]
    for o in result.untriaged:
        lines += [f"\nSURVIVED (not triaged): {o.mutant.id}", o.mutant.diff.rstrip()]
    for mutant_id in result.stale_triage:
        lines.append(f"  note: triaged {mutant_id} did not survive (killed, renumbered or gone): update {TRIAGE_FILE.name}")
    lines.append("PASS" if result.passed(threshold) else f"FAIL: score {result.score:.4f} < threshold {threshold}")
    return "\n".join(lines)
