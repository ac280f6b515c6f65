"""Runs call programs (the battery, the fuzz item's minimal program) through the submission's driver under
valgrind, in the sandbox, and says in one line per program what memory error or leak it found.

The calls go over the driver's private pipes and every reply is checked against the model, so a program
counts only if it really ran; valgrind writes its log to a file of ours through a descriptor it keeps out of
the program's reach, so no line the submission prints or writes can claim a verdict. All programs run in one
driver process (valgrind's start-up costs a second or two), one after the other: the log's growth during a
program is that program's errors; a crash restarts the driver for the next program. Leaks are reported when
the driver exits, so valgrind's leak summary is given to the last program run by the process that leaked;
our own heap accounting (checks.py) pins a leak to its scenario.
"""

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.valgrind import VALGRIND
from oracle.hw3.replay import Step, call_on, shown
from oracle.hw3.compare import first_divergence
from oracle.hw3.machine import POINTER_CALLS, Call
from oracle.hw3.model import Model
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.scenarios import BATTERY, scenario_calls
from oracle.sandbox import Sandbox

LEAK_KINDS = "definite,indirect,possible"
MEMCHECK = (*VALGRIND, f"--errors-for-leak-kinds={LEAK_KINDS}", f"--show-leak-kinds={LEAK_KINDS}")
STARTUP = 10.0  # s: valgrind's start-up, on top of a call's time
LOG_LIMIT = 1 << 20  # bytes of valgrind's log read per program
HUNG = ": hung"  # how a program that stopped at a call that never returned ends its `stopped`
AT_EXIT = "the driver's exit (leaks left by the programs above)"

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
    stopped: str | None = None  # where the program stopped short of its last call ("step 1 ...: what differs")
    stopped_at: Call | None = None  # the call whose return value stopped it


def battery_programs(scenarios: Sequence[str] = tuple(BATTERY)) -> dict[str, tuple[list[Call], Model]]:
    return {name: scenario_calls(name) for name in scenarios}


def memcheck(
    driver: Path,
    programs: dict[str, tuple[Sequence[Call], Model]],
    *,
    timeout: float = 30,
    sandbox: Sandbox | None = None,
) -> list[MemcheckResult]:
    """Each program (name -> its calls, and the model after the last one) through `driver` (a built driver
    program) under valgrind, one result each, in order, then one named AT_EXIT if the driver's exit found a
    leak. `timeout` bounds each call (valgrind's start-up added)."""
    with tempfile.TemporaryFile() as log:
        adapter = CAdapter(driver, timeout=timeout + STARTUP, wrapper=(*MEMCHECK, f"--log-fd={log.fileno()}"),
                           seccomp=False, close_timeout=timeout + STARTUP, sandbox=sandbox,
                           pass_fds=(log.fileno(),))
        runs: list[tuple[str, int, tuple[str | None, Call | None], str]] = []  # name, log start, stop, output
        try:
            for name, (calls, model) in programs.items():
                start = os.fstat(log.fileno()).st_size
                runs.append((name, start, _run(adapter, calls, model), adapter.output))
                if (runs[-1][2][0] or "").endswith(HUNG):  # the next programs would wait as long again: one is enough
                    break
            runs.append((AT_EXIT, os.fstat(log.fileno()).st_size, (None, None), adapter.output))
        finally:
            adapter.close()
        text = os.pread(log.fileno(), LOG_LIMIT * (len(runs) + 1), 0)
    results = []
    for index, (name, start, (stopped, stopped_at), output) in enumerate(runs):
        end = runs[index + 1][1] if index + 1 < len(runs) else len(text)
        part = text[start:end][:LOG_LIMIT].decode(errors="replace")
        clean, summary = _verdict(part, stopped)
        if name != AT_EXIT or not clean:
            short = stopped if stopped and not stopped.startswith("after step") else None  # its calls did not all run
            results.append(MemcheckResult(name, clean, summary, f"{part}\n--- program output ---\n{output}", short,
                                          stopped_at))
    return results


def _run(adapter: CAdapter, calls: Sequence[Call], model: Model) -> tuple[str | None, Call | None]:
    """Makes the calls, checking each return value, then the state after the last one against the model;
    destroys an engine still live, so that the next program starts clean. Where it stopped, if it did:
    "step N ...: what differs" (with the call), "crash: label" or "step N ...: hung" (with the call)."""
    engine, number, call = None, 0, None
    try:
        for number, call in enumerate(calls, 1):
            engine, returned = call_on(adapter, Step(call.api, call.args, call.null), engine)
            got = returned is not None if call.api in POINTER_CALLS else returned
            if got != call.expected:
                return f"step {number} {call}: return value: expected {shown(call.api, call.expected)}, got {shown(call.api, got)}", call
        problem = first_divergence(model, adapter.observe(engine), False)
        return (f"after step {len(calls)}: {problem}" if problem else None), None
    except ImplementationFailure as failure:
        if str(failure).startswith("hung"):
            return f"step {number} {call}{HUNG}", call
        return f"crash: {failure}", None
    finally:
        if engine is not None and adapter.pid is not None:
            try:
                adapter.llm_destroy(engine)
            except ImplementationFailure:
                pass


def _verdict(log: str, stopped: str | None) -> tuple[bool, str]:
    """Whether a program's part of the log is clean, and the one-line summary of what it found first."""
    errors, crash, leaks = _findings(log)
    problems = errors[:1] + ([f"and {len(errors) - 1} more error(s)"] if len(errors) > 1 else [])
    if (stopped or "").endswith(HUNG):  # not a memory error: the call's own item judges a hang
        pass
    elif crash:
        problems.append(f"crashed: {crash}")
    elif (stopped or "").startswith("crash: "):  # the driver's own words: "crashed with SIGSEGV", "free(0x..): ..."
        problems.append((stopped or "").removeprefix("crash: "))
    problems += leaks
    if problems:
        return False, "; ".join(problems)
    if stopped:  # fine for memory, but the calls after the divergence never ran
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

