"""Runs the battery (and any other repro-style program) under valgrind and says, in one line per program,
what memory error or leak it found.

The whole battery is one binary run once under valgrind (its start-up costs about a second): it replays
each scenario in a forked child, and valgrind, logging each process to a file of its own, checks each
child's leaks when it exits. So a leak or a crash is pinned to its scenario, one crash hides nothing else,
and the battery takes a few seconds.
"""

import math
import re
import signal
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from oracle.hw3.c.build import OFFICIAL_FLAGS
from oracle.hw3.c.process import Finished, run_program
from oracle.hw3.c.valgrind import ERROR_EXIT, VALGRIND
from oracle.hw3.repro import MARK, battery_c, build_repro
from oracle.hw3.scenarios import BATTERY, scenario_calls

LEAK_KINDS = "definite,indirect,possible"
MEMCHECK = (*VALGRIND, f"--errors-for-leak-kinds={LEAK_KINDS}", f"--show-leak-kinds={LEAK_KINDS}")
STARTUP = 10.0  # s: valgrind's start-up, on top of the scenarios' time
DIVERGED = 1  # a repro's exit status when the state differs: not a memory error

_PREFIX = re.compile(r"^==\d+==(?: |$)")
_FRAME = re.compile(r"^\s+(?:at|by) 0x[0-9A-Fa-f]+: .*\((\S+?):(\d+)\)$")
_LOSS = re.compile(r"^[\d,]+ (?:\([\d,]+ direct, [\d,]+ indirect\) )?bytes in [\d,]+ blocks are (\w+) lost")
_LEAK_TOTAL = re.compile(r"^\s+(definitely|indirectly|possibly) lost: ([\d,]+) bytes in ([\d,]+) blocks")
_SIGNAL = re.compile(r"^Process terminating with default action of signal \d+ \((\w+)\)")
_NOT_ERRORS = re.compile(r"^(Memcheck|Copyright|Using Valgrind|Command|Parent PID|HEAP SUMMARY|LEAK SUMMARY|"
                         r"For lists|For counts|ERROR SUMMARY|All heap blocks|Reachable blocks|To see them|"
                         r"Rerun with|Warning|Searching|Checked|\s|[\d,]+ bytes in [\d,]+ blocks are still reachable)")


@dataclass(frozen=True, slots=True)
class MemcheckResult:
    name: str
    clean: bool
    summary: str  # one line: "definitely lost 64 bytes in 1 blocks, allocated at llm_memory.c:83", ...
    log: str  # valgrind's log, then what the program printed


def memcheck(
    submission: Path,
    workdir: Path,
    programs: dict[str, str] | None = None,
    timeout: float = 60,
    *,
    scenarios: Iterable[str] = tuple(BATTERY),
    flags: Sequence[str] = OFFICIAL_FLAGS,
) -> list[MemcheckResult]:
    """The battery's `scenarios` (all by default), then each of `programs` (name -> C source with its own
    main), compiled with the submission (with `flags`) and run under valgrind; one result each, in that order. `timeout`
    bounds each program, and the whole battery, shared evenly among its scenarios (a hang in one must not
    take the others' time). The battery and the programs run side by side, two at a time."""
    workdir, scenarios = Path(workdir), list(scenarios)
    jobs: list[Callable[[], list[MemcheckResult]]] = []
    if scenarios:
        jobs.append(partial(_battery, submission, workdir / "battery", scenarios, timeout, flags))
    for name, source in (programs or {}).items():
        jobs.append(partial(_program, submission, workdir / f"program-{_file_name(name)}", name, source, timeout, flags))
    with ThreadPoolExecutor(max_workers=2) as pool:
        return [result for batch in pool.map(lambda job: job(), jobs) for result in batch]


def _battery(
    submission: Path, workdir: Path, scenarios: list[str], timeout: float, flags: Sequence[str]
) -> list[MemcheckResult]:
    source = battery_c({name: scenario_calls(name) for name in scenarios})
    binary, output = build_repro(source, submission, workdir, name="battery", flags=flags)
    if binary is None:
        return [MemcheckResult(name, False, "does not compile with the official flags", output) for name in scenarios]
    logs = workdir / "valgrind"
    logs.mkdir(exist_ok=True)
    for old in logs.glob("*.log"):
        old.unlink()
    seconds = math.ceil(timeout / len(scenarios))
    cmd = [*MEMCHECK, f"--log-file={logs}/%p.log", binary, "--each", str(seconds)]
    done = run_program(cmd, cwd=workdir, timeout=seconds * len(scenarios) + STARTUP)
    finished: dict[str, tuple[Finished, str]] = {}
    printed: list[str] = []
    for line in done.output.splitlines():
        if line.startswith(f"{MARK} "):
            _, name, pid, how, number = line.split()
            log = logs / f"{pid}.log"
            status = -int(number) if how == "signal" else int(number)
            text = log.read_text(errors="replace") if log.exists() else ""
            finished[name] = Finished(status, "\n".join(printed).strip()), text
            printed = []
        else:
            printed.append(line)
    results = []
    for name in scenarios:
        if name not in finished:  # the battery itself was stopped before this scenario's turn ended
            results.append(MemcheckResult(name, False, "did not finish: the battery run was stopped", done.output))
            continue
        child, log = finished[name]
        if child.status == -signal.SIGALRM:  # the battery's alarm: the scenario ran out of time
            child = Finished(None, child.output)
        results.append(_result(name, log, child, seconds))
    return results


def _program(
    submission: Path, workdir: Path, name: str, source: str, timeout: float, flags: Sequence[str]
) -> list[MemcheckResult]:
    binary, output = build_repro(source, submission, workdir, name="program", flags=flags)
    if binary is None:
        return [MemcheckResult(name, False, "does not compile with the official flags", output)]
    log = workdir / "valgrind.log"
    log.unlink(missing_ok=True)
    done = run_program([*MEMCHECK, f"--log-file={log}", binary], cwd=workdir, timeout=timeout)
    return [_result(name, log.read_text(errors="replace") if log.exists() else "", done, timeout)]


def _result(name: str, log: str, done: Finished, timeout: float) -> MemcheckResult:
    return MemcheckResult(name, *_verdict(log, done, timeout), f"{log}\n--- program output ---\n{done.output}")


def _verdict(log: str, done: Finished, timeout: float) -> tuple[bool, str]:
    """Whether a valgrind run was clean, and the one-line summary of what it found first."""
    errors, crash, leaks = _findings(log)
    problems = errors[:1] + ([f"and {len(errors) - 1} more error(s)"] if len(errors) > 1 else [])
    if done.status is None:
        problems.append(f"timed out after {timeout:g} s")
    elif done.status < 0 or crash:
        problems.append(f"crashed: {crash or done.signal_name}")
    elif done.status not in (0, DIVERGED, ERROR_EXIT):
        problems.append(f"exited with status {done.status}")
    problems += leaks
    if done.status == ERROR_EXIT and not errors and not leaks:
        problems.append("valgrind reported errors")
    if problems:
        return False, "; ".join(problems)
    if done.status == DIVERGED:  # fine for memory, but the calls after the divergence never ran
        stopped = next((line for line in done.output.splitlines() if "step" in line), "a divergence")
        return True, f"no memory errors, no leaks (the program stopped at {stopped})"
    return True, "no memory errors, no leaks"


def _findings(log: str) -> tuple[list[str], str, list[str]]:
    """Valgrind's errors in order ("Invalid write of size 4 at llm_memory.c:87"), the fatal signal with
    where it struck, and the leaks by kind with where the first of each kind was allocated."""
    errors: list[str] = []
    crash = ""
    leak_sites: dict[str, str] = {}
    totals: list[tuple[str, str, str]] = []
    for block in _blocks(log):
        title, frames = block[0], block[1:]
        where = _where(frames)
        at = f" at {where}" if where else ""
        if match := _SIGNAL.match(title):
            crash = match.group(1) + at
        elif match := _LOSS.match(title):
            leak_sites.setdefault(match.group(1), where)
        elif title.startswith("LEAK SUMMARY"):
            totals = [m.groups() for line in frames if (m := _LEAK_TOTAL.match(line)) and m.group(2) != "0"]
        elif not _NOT_ERRORS.match(title):
            errors.append(title.replace(" / delete / delete[] / realloc()", "") + at)
    leaks = []
    for kind, size, count in totals:
        site = leak_sites.get(kind, "")
        leaks.append(f"{kind} lost {size} bytes in {count} blocks" + (f", allocated at {site}" if site else ""))
    return errors, crash, leaks


def _blocks(log: str) -> list[list[str]]:
    """The log's paragraphs (valgrind separates them with an empty prefixed line), prefixes removed."""
    blocks: list[list[str]] = [[]]
    for line in log.splitlines():
        if not _PREFIX.match(line):
            continue
        text = _PREFIX.sub("", line, count=1)
        if text.strip():
            blocks[-1].append(text)
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def _where(frames: list[str]) -> str:
    """file:line of the first frame in the submission, else the first frame outside valgrind's own files."""
    sites = [f"{m.group(1)}:{m.group(2)}" for line in frames if (m := _FRAME.match(line))]
    ours = [site for site in sites if not site.startswith("vg_")]
    return next((site for site in ours if site.startswith("llm_memory.c:")), ours[0] if ours else "")


def _file_name(name: str) -> str:
    return re.sub(r"[^\w.-]", "_", name)
