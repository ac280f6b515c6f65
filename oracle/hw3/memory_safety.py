"""The memory_safety item: our heap accounting over the fixed battery (nothing may stay allocated while there
is no engine), then valgrind over the battery and over the fuzz item's minimal failing program. It judges
every memory error and leak, and nothing else: a call that hangs is its own item's bug (the program stops
there, unjudged, and the next program runs in a fresh process), and an item that did not watch the whole
battery run is not run, naming the item that stopped it.

Each battery program runs natively and under valgrind, and the grader compares what it observed of the two
(trace.py: return values, the engine's state, the pool's bytes, call by call): a program that behaves
differently under valgrind fails this item, whatever valgrind says, since valgrind watched another program
than the one the other items graded."""

import re
from contextlib import closing
from typing import Any, Mapping

from oracle.grading.grader import ANY_OTHER, Excuse, NotApplicable, NotRun, Outcome, Seen
from oracle.grading.rubric import positive
from oracle.difference import Difference
from oracle.hw3.difference import RETURN
from oracle.hw3.c.stray import Watch, named
from oracle.hw3.feedback import listing as calls_listed
from oracle.hw3.call import Call
from oracle.hw3.memcheck import MemcheckResult, apply_program, battery_programs, memcheck
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.replay import listing
from oracle.hw3.rules import CHECK_BEFORE_ALLOCATE, MEMORY_SAFETY, TASKS, rule_of
from oracle.hw3.programs import BATTERY
from oracle.hw3.trace import TraceStep, first_difference
from oracle.markdown import fenced, said as quoted
from oracle.hw3.rules import item_of
from oracle.hw3.verdicts import Submission, built

MEMCHECK_OPTIONS = {"timeout": 20.0}  # s one call may take under valgrind
MEMCHECK_LIMITS = {"timeout": positive}
_LOG_LINES = 60
HUNG = "hung"  # what _leak says of a program a call of which never returned
CORRUPTED = " (valgrind did not say where)"  # how _leak's problem ends when the heap was found corrupted


class Crashed(str):
    """_leak's problem where a call did not return normally: the staff's words, with `said`, the failure's own text
    (what the implementation's process said), apart for a student's Markdown."""

    said: str = ""


def check_memory_safety(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    if sub.kind != "c":
        raise NotApplicable("valgrind and heap accounting need a C submission")
    built(sub)
    # natively twice: blocks at their last page's end (a read or write past a block's end faults), then at their
    # first page's start (one in front of its start faults): each side of every block has no readable neighbour
    # in one of the two runs
    battery = battery_programs()
    native, hung, corrupted, leak = _native_battery(sub, battery, at_start=False)
    starts, hung_too, corrupted_too, leak_too = _native_battery(
        sub, {name: program for name, program in battery.items() if name not in dict(hung)}, True)
    hung, corrupted, leak = hung + hung_too, corrupted or corrupted_too, leak or leak_too
    for name, trace in starts.items():
        if name not in dict(hung) and (differs := first_difference(native[name], trace)):
            corrupted = corrupted or Outcome(
                False, f"program {name} behaves differently with its heap blocks at page starts than at page ends, "
                       f"at {differs}: a program that reads its own pointers' layout [rule: {MEMORY_SAFETY}]",
                listing(battery[name][0], 0))
    programs = {name: program for name, program in battery.items() if name not in dict(hung)}
    fresh = {name for name in programs if _after(name, dict(hung))}  # where the native run restarted the driver
    if sub.fuzz_failure is not None:  # the fuzz item's minimal failing program, as its repro.c replays it
        programs[FUZZ_PROGRAM] = (sub.fuzz_failure.calls, sub.fuzz_failure.model)
    assert sub.build is not None
    driver = sub.build.driver or sub.build.lenient_driver
    results = memcheck(driver, programs, timeout=options["timeout"], sandbox=sub.sandbox, fresh_before=fresh)
    if leak is not None:  # our accounting found it: valgrind's pass says where the blocks were allocated
        return _with_sites(leak, results)
    if false := next((r for r in results if r.name in native and r.leaked and r.stopped is None and r.trace  # ran whole,
                      and len(r.trace) == len(native[r.name]) and not first_difference(native[r.name], list(r.trace))), None):
        raise _accounting_false(false)  # as natively, where nothing was counted with no engine
    for result in results:
        if not result.clean:
            return Outcome(False, f"valgrind, program {result.name}: {result.summary} [rule: {MEMORY_SAFETY}]",
                           _first_lines(result.log.splitlines()),
                           student=_valgrind_words(result, programs.get(result.name, ([], None))[0]))
    for result in results:
        if result.name in native and (differs := first_difference(native[result.name], list(result.trace))):
            return Outcome(False, f"program {result.name} behaves differently under valgrind than natively, at {differs}: "
                                  f"valgrind's verdict is about another run than the one graded [rule: {MEMORY_SAFETY}]",
                           listing(programs[result.name][0], 0))
    if corrupted is not None:
        return corrupted
    if hung:  # the battery did not run whole: the hung call's item must fail for it
        name, call = hung[0]
        raise _not_watched(MemcheckResult(name, True, "", "", f"step {len(native[name])} {call}: hung", call), whole=True)
    engines = [result for result in results  # the battery's programs that make an engine (not only refuse one)
               if result.name in BATTERY and any(c.api == "llm_init" and c.expected for c in programs[result.name][0])]
    if all(result.stopped for result in engines):  # valgrind watched none of them run whole
        raise _not_watched(engines[0])
    return Outcome(True)


FUZZ_PROGRAM = "the fuzzing test's minimal program (repro.c)"
_OURS = re.compile(r"driver(?:_probes)?\.c:|vgpreload|__wrap_|^--- program output ---$")  # the grader's frames, not the student's


def _student_of(problem: str, calls: list[Call]) -> str:
    """A student's text of what a battery program met natively (_leak's problem): the call and the grader's words,
    a crash's own text (Crashed.said) in a block below them, then the calls."""
    said = problem.split(": ", 1)[-1].replace("step ", "call ", 1)  # without the program's name
    if isinstance(problem, Crashed):
        said = quoted(f"{said.removesuffix(f': {problem.said}')}: it did not return normally", problem.said)
    else:
        said += "."
    return f"{said[0].upper()}{said[1:]}\n\nThe calls:\n\n{fenced(calls_listed(calls, _number(said), 'c'), 'c')}"


def _valgrind_words(result: MemcheckResult, calls: list[Call]) -> str:
    """What valgrind found, for a student: its summary, the calls the program made, and valgrind's report less
    the grader's own frames."""
    log = [line for line in result.log.splitlines() if not _OURS.search(line)]
    made = f"\n\nWhile making these calls{' (the program of the fuzzing test, repro.c)' if result.name == FUZZ_PROGRAM else ''}:" \
           f"\n\n{fenced(calls_listed(calls, 0, 'c'), 'c')}" if calls else ""
    report = _first_lines(log).strip()  # valgrind's words, which quote the program's
    return quoted("Valgrind", result.summary) + made + (f"\n\nValgrind's report:\n\n{fenced(report)}" if report else "")


def _first_lines(log: list[str]) -> str:
    """Valgrind's log as shown: its first _LOG_LINES lines, and how many more there were."""
    return "\n".join(log[:_LOG_LINES] + ([f"... ({len(log) - _LOG_LINES} more lines)"] if len(log) > _LOG_LINES else []))


_SITE = re.compile(r"lost [\d,]+ bytes in [\d,]+ blocks, allocated at ([\w.+-]+:\d+)")


def _with_sites(leak: Outcome, results: list[MemcheckResult]) -> Outcome:
    """A leak our heap accounting found, with where valgrind saw the lost blocks allocated (file:line)."""
    sites = list(dict.fromkeys(site for result in results for site in _SITE.findall(result.summary)))
    if not sites:
        return leak
    where = f"allocated at {', '.join(sites)} (valgrind's leak report)"
    message = leak.message.replace(f" [rule: {MEMORY_SAFETY}]", f", {where} [rule: {MEMORY_SAFETY}]")
    head, _, rest = leak.student.partition("\n\n")  # its first sentence, when the grader's words end it
    student = f"{head.removesuffix('.')}, {where}.\n\n{rest}" if head.endswith(".") \
        else f"{leak.student}\n\nThe lost blocks were {where}."
    return Outcome(False, message, leak.details, student=student)


def _number(said: str) -> int:
    """The call number in "call N ...", 0 when there is none."""
    match = re.match(r"call (\d+) ", said)
    return int(match.group(1)) if match else 0


def _after(name: str, hung: Mapping[str, Call]) -> bool:
    """Whether battery program `name` comes right after one that hung natively (and so ran in a fresh process)."""
    names = list(BATTERY)
    at = names.index(name)
    return at > 0 and names[at - 1] in hung


def _accounting_false(result: MemcheckResult) -> NotRun:
    """Valgrind found blocks still allocated after a battery program whose native run, its live blocks read
    from the driver's mappings, left none with no engine live: the program keeps blocks under valgrind only.
    Every item that rests on the native count (a leak, a failing call's allocations) may have passed on
    another program than valgrind's: each that passed takes this failure (an Excuse), and this item, whose
    valgrind check found the leak, scores nothing either."""
    failure = Seen(f"valgrind, program {result.name}: {result.summary}, where the native run left none: the "
                   f"program keeps blocks under valgrind only [rule: {MEMORY_SAFETY}]", result.log, elsewhere=False)
    owners = {item for item in (item_of(TASKS["llm_destroy"]), item_of(CHECK_BEFORE_ALLOCATE), "alloc_failure", "fuzz") if item}
    return NotRun(f"could not check its rule: the native heap count was not valgrind's ({failure.message})",
                  Excuse(frozenset(owners), failure))


def _not_watched(first: MemcheckResult, whole: bool = False) -> NotRun:
    """Not run: valgrind saw no memory error, but the battery did not run as it must (`whole`: a program hung,
    so the battery did not run whole; else no engine-making program ran whole; the first stopped where `first`
    did). That call's item must fail for it (an Excuse), else this item fails."""
    owner = item_of(rule_of(Difference(RETURN, "", None, None), first.stopped_at)) if first.stopped_at else None
    whose = f"item {owner}" if owner else "the other items"
    what = " past a call that hung: the battery did not run whole" if whole else ": no program of the battery made all its calls"
    failure = Seen(f"valgrind, program {first.name}: stopped at {first.stopped}, and no item failed for it "
                   f"[rule: {MEMORY_SAFETY}]", first.log, elsewhere=False)
    return NotRun(f"could not check its rule{what} ({first.name} stopped at {first.stopped}: that is {whose}'s "
                  "to judge)", Excuse(frozenset({owner or ANY_OTHER}), failure))


def _leak(adapter: Any, name: str, calls: list[Call], trace: list[TraceStep]) -> str | None:
    """Applies a battery program natively as memcheck applies it under valgrind (apply_program), then destroys
    an engine still live; the first crash, read or write outside any live heap block (the driver's guard and
    freed pages, counted from outside: c/stray.py's Watch), or heap block still allocated while there is no
    engine. A call that hangs ends the program unjudged (HUNG)."""
    watch, strays = named(adapter, name).watch, []  # the program goes on past a stray access, as on an ordinary heap

    def after_call(label: str, engine: object) -> str | None:
        if not strays and (stray := _stray(watch, name, label)):
            strays.append(stray)
        return _left(adapter, name, label) if engine is None else None

    done = apply_program(adapter, calls, trace, after_call)
    failure = done.failure
    if failure is None and done.problem is None and not strays and (stray := _stray(watch, name, done.label)):
        strays.append(stray)  # in the call whose return value stopped the program
    if failure is None and done.problem is None and done.engine is not None:  # as memcheck does before valgrind's leak check
        label = f"after {done.label}, its engine destroyed by the grader"
        try:
            adapter.llm_destroy(done.engine)
            return next(iter(strays), None) or _stray(watch, name, label) or _left(adapter, name, label)
        except ImplementationFailure as ended:
            trace.append(TraceStep(label, "hung" if str(ended).startswith("hung") else f"ended ({ended})", "", ""))
            failure, done.label = ended, label
    if failure is None:
        return next(iter(strays), None) or done.problem
    if str(failure).startswith("hung"):
        return HUNG
    crashed = Crashed(f"{name}: {done.label}: {failure}" + (CORRUPTED if failure.heap_corrupted else ""))
    crashed.said = str(failure)
    return crashed


def _stray(watch: Watch, name: str, label: str) -> str | None:
    """The program's read or write outside any live heap block, as the Watch noted it at the call `label`, as a
    memory error; None when there was none. Natively the driver lets such an access go on, on a page the grader
    counts from outside, so the calls after it run as they would on an ordinary heap."""
    return None if watch.stray is None else f"{name}: {label}: {watch.stray.problem()}{CORRUPTED}"


def _left(adapter: Any, name: str, label: str) -> str | None:
    """The heap blocks the driver counts with no engine live, as a problem; None when there are none."""
    heap = adapter.observe(None).heap
    if heap is not None and heap.live_blocks:
        return f"{name}: {label}: {heap.live_blocks} heap block(s) ({heap.live_bytes} bytes) still allocated with no engine"
    return None


def _native_battery(sub: Submission, battery: Mapping[str, tuple], at_start: bool) -> tuple[
        dict[str, list[TraceStep]], list[tuple[str, Call]], Outcome | None, Outcome | None]:
    """The battery run natively, in one process (as under valgrind: restarted after a crash or a hang), its
    blocks at their first page's start or last page's end: each program's trace, the programs that hung (with
    the call: charged to its item), the first memory error (the heap found corrupted), the first leak (a block
    still allocated with no engine: valgrind's pass says where it was allocated)."""
    corrupted: Outcome | None = None
    leak: Outcome | None = None
    native: dict[str, list[TraceStep]] = {}
    hung: list[tuple[str, Call]] = []
    with closing(sub.adapter()) as adapter:
        adapter.blocks_at_start = at_start
        adapter.watch = adapter.watch or Watch([])  # the strays it counts are this item's own facts too
        for name, (calls, _) in battery.items():
            native[name] = []
            problem = _leak(adapter, name, calls, native[name])
            if problem is HUNG:  # its item's bug; the battery goes on, and valgrind need not wait for it again
                hung.append((name, calls[len(native[name]) - 1]))
                continue
            if problem and problem.endswith(CORRUPTED):
                corrupted = corrupted or Outcome(False, f"{problem} [rule: {MEMORY_SAFETY}]", listing(calls, 0))
            elif problem and leak is None:
                leak = Outcome(False, f"{problem} [rule: {MEMORY_SAFETY}]", listing(calls, 0),
                               student=_student_of(problem, calls))
    return native, hung, corrupted, leak
