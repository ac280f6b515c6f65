"""Runs call programs (the battery, the fuzz item's minimal program) through the submission's driver under
valgrind, in the sandbox, and says in one line per program what memory error or leak it found.

The calls go over the driver's private pipes and every reply is checked against the model, so a program
counts only if it really ran. Valgrind writes its log to a socket of ours (log_channel.LogChannel): the driver
closes the program's copy of the descriptor before any submission code runs, valgrind's own copy is out of
the program's reach, and a socket cannot be reopened through /proc, so no line the submission prints or
writes can claim a verdict or erase one. All programs run in one driver process (valgrind's start-up costs a
second or two), one after the other: the log's growth during a program is that program's errors. After each
program, with its engine destroyed, the grader asks valgrind for a leak check (the driver's 'L' request):
valgrind counts every heap block the process holds, however it was allocated, so anything still allocated
then, reachable or not, is that program's leak; a check missing from the log is a check dodged. A crash or a
hang restarts the driver for the next program. Each program's trace (trace.py) is kept, for memory_safety to
compare with the native run.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection, Sequence

from oracle.hw3.c.adapter import CAdapter
from oracle.native.log_channel import LogChannel
from oracle.native.valgrind import VALGRIND, memcheck_program
from oracle.hw3 import programs as shipped
from oracle.hw3.step import call_on, expected_calls
from oracle.program import Step
from oracle.hw3.compare import first_divergence
from oracle.hw3.call import Call, returned_value, shown
from oracle.hw3.model import Model
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.trace import TraceStep, observed
from oracle.sandbox import Sandbox

LEAK_KINDS = "definite,indirect,possible"
# --malloc-fill: fresh blocks hold the driver's own fill byte (driver.c), so a program reads the same bytes
# under valgrind as natively (valgrind still reports their use as uninitialised)
MEMCHECK = (*VALGRIND, f"--errors-for-leak-kinds={LEAK_KINDS}", f"--show-leak-kinds={LEAK_KINDS}", "--malloc-fill=0xA5")
STARTUP = 10.0  # s: valgrind's start-up, on top of a call's time
LOG_LIMIT = 1 << 20  # bytes of valgrind's log read per program
HUNG = ": hung"  # how a program that stopped at a call that never returned ends its `stopped`
AT_EXIT = "the driver's exit (leaks left by the programs above)"

_PREFIX = re.compile(r"^==\d+==(?: |$)")
_FRAME = re.compile(r"^\s+(?:at|by) 0x[0-9A-Fa-f]+: .*\((\S+?):(\d+)\)$")
_LOSS = re.compile(r"^[\d,]+ (?:\([\d,]+ direct, [\d,]+ indirect\) )?bytes in [\d,]+ blocks are (\w+) lost")
_LEAK_TOTAL = re.compile(r"^\s+(definitely lost|indirectly lost|possibly lost|still reachable): ([\d,]+) bytes in ([\d,]+) blocks")
CHECKED = ("LEAK SUMMARY", "All heap blocks were freed")  # what valgrind's leak check writes, whatever it finds
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
    trace: tuple[TraceStep, ...] = ()  # what the grader observed, call by call (trace.py)
    leaked: bool = False  # valgrind found heap blocks still allocated (its leak check after the program, or the exit)


def battery_programs(names: Sequence[str] = shipped.BATTERY) -> dict[str, tuple[list[Call], Model]]:
    """The battery's programs `names` (programs/battery/) as calls with the returns the model expects, and the
    model after each."""
    return {name: expected_calls(shipped.battery_program(name)) for name in names}


def memcheck(
    driver: Path,
    programs: dict[str, tuple[Sequence[Call], Model]],
    *,
    timeout: float = 30,
    sandbox: Sandbox | None = None,
    fresh_before: Collection[str] = (),
) -> list[MemcheckResult]:
    """Each program (name -> its calls, and the model after the last one) through `driver` (a built driver
    program) under valgrind, one result each, in order, then one named AT_EXIT if the driver's exit found a
    leak. `timeout` bounds each call (valgrind's start-up added). A program that hangs is stopped there and the
    next one runs in a fresh process; after a second hang the rest are not run (each would wait as long). The
    programs named in `fresh_before` start in a fresh process too (where a native run of the battery did)."""
    channel = LogChannel(LOG_LIMIT * (len(programs) + 1))
    adapter = CAdapter(driver, timeout=timeout + STARTUP, wrapper=(*MEMCHECK, f"--log-fd={channel.child_fd}"),
                       seccomp=False, close_timeout=timeout + STARTUP, sandbox=sandbox, log_channel=channel,
                       program=memcheck_program())
    runs: list[tuple[str, int, tuple[str | None, Call | None], str, tuple[TraceStep, ...], bool]] = []
    try:
        hangs = 0
        for name, (calls, model) in programs.items():
            if name in fresh_before:
                adapter.close()  # started again by the next call
            start = len(channel.text)
            stop, trace, checked = _run(adapter, calls, model)
            runs.append((name, start, stop, adapter.output, trace, checked))
            hangs += (stop[0] or "").endswith(HUNG)
            if hangs == 2:
                break
        runs.append((AT_EXIT, len(channel.text), (None, None), adapter.output, (), False))
    finally:
        adapter.close()
        channel.close()
    text = bytes(channel.text)
    results = []
    for index, (name, start, (stopped, stopped_at), output, trace, checked) in enumerate(runs):
        end = runs[index + 1][1] if index + 1 < len(runs) else len(text)
        part = text[start:end][:LOG_LIMIT].decode(errors="replace")
        clean, summary = _verdict(part, stopped)
        leaked = bool(_findings(part)[2])
        if checked and not any(mark in part for mark in CHECKED):
            clean, summary = False, "valgrind's leak check after the program is missing from its log (the check was dodged)"
        if name != AT_EXIT or not clean:
            short = stopped if stopped and not stopped.startswith("after step") else None  # its calls did not all run
            results.append(MemcheckResult(name, clean, summary, f"{part}\n--- program output ---\n{output}", short,
                                          stopped_at, trace, leaked))
    return results


@dataclass(slots=True)
class Applied:
    """How a program went when applied (apply_program): where it stopped, and the engine it left live."""

    engine: object = None  # the engine live after the last call made (None: none)
    call: Call | None = None  # the last call made
    label: str = ""  # "step N call"
    got: bool | int | None = None  # what the last call returned, when it differs from what the model expects
    failure: ImplementationFailure | None = None  # the last call crashed or hung
    problem: str | None = None  # what `after_call` found, which stopped the program


def apply_program(adapter: CAdapter, calls: Sequence[Call], trace: list[TraceStep],
                  after_call: Callable[[str, object], str | None] | None = None) -> Applied:
    """Makes a program's calls, the same way natively and under valgrind (memory_safety compares the two
    traces): each call's return value against the model's, stopping at the first that differs (the model's
    later calls are not this state's), noting in `trace` what the grader observed after each call. A crash or
    a hang stops it too. `after_call(label, engine)`, when given, may stop it with a problem."""
    done = Applied()
    for number, call in enumerate(calls, 1):
        done.call, done.label = call, f"step {number} {call}"
        try:
            done.engine, returned = call_on(adapter, Step(call.api, call.args, call.null), done.engine)
            got = returned_value(call.api, returned)
            trace.append(TraceStep(done.label, shown(call.api, got), *observed(adapter, done.engine, any(c.api == "llm_init" for c in calls[:number]))))
        except ImplementationFailure as failure:
            hung = str(failure).startswith("hung")
            trace.append(TraceStep(done.label, "hung" if hung else f"ended ({failure})", "", ""))
            done.failure = failure
            return done
        if got != call.expected:
            done.got = got
            return done
        if after_call is not None and (problem := after_call(done.label, done.engine)):
            done.problem = problem
            return done
    return done


def _run(adapter: CAdapter, calls: Sequence[Call], model: Model) -> tuple[tuple[str | None, Call | None], tuple[TraceStep, ...], bool]:
    """Applies the program, then checks the state after the last call against the model; destroys an engine
    still live, so that the next program starts clean, and asks valgrind for a leak check. Where it stopped,
    if it did: "step N ...: what differs" (with the call), "crash: label" or "step N ...: hung" (with the
    call); the trace of what it observed; whether the leak check was asked for."""
    trace: list[TraceStep] = []
    done = apply_program(adapter, calls, trace)
    if done.failure is None and done.got is not None and done.call is not None:
        expected, got = shown(done.call.api, done.call.expected), shown(done.call.api, done.got)
        return (f"{done.label}: return value: expected {expected}, got {got}", done.call), tuple(trace), \
            _leak_check(adapter, done.engine)
    if done.failure is None:
        try:
            problem = first_divergence(model, adapter.observe(done.engine), False)
            return ((f"after step {len(calls)}: {problem}" if problem else None), None), tuple(trace), \
                _leak_check(adapter, done.engine)
        except ImplementationFailure as failure:
            trace.append(TraceStep(done.label, "hung" if str(failure).startswith("hung") else f"ended ({failure})", "", ""))
            done.failure = failure
    if str(done.failure).startswith("hung"):
        return (f"{done.label}{HUNG}", done.call), tuple(trace), False
    return (f"crash: {done.failure}", None), tuple(trace), False


def _leak_check(adapter: CAdapter, engine: object) -> bool:
    """Destroys the program's engine, if live, then asks valgrind for a leak check; whether it was asked
    (False: the driver ended first, which its program's verdict tells)."""
    try:
        if engine is not None:
            adapter.llm_destroy(engine)
        adapter.leak_check()
        return True
    except ImplementationFailure:
        return False


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
        site = leak_sites.get(kind.split()[0], "")
        where = f", allocated at {site}" if site else ""
        if kind == "still reachable":  # checked with no engine live: a block the program still points to is kept, not freed
            leaks.append(f"{size} bytes in {count} blocks still allocated (reachable) with no engine live{where}")
        else:
            leaks.append(f"{kind} {size} bytes in {count} blocks{where}")
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

