"""The memory_safety item: our heap accounting over the fixed battery (nothing may stay allocated while there
is no engine), then valgrind over the battery and over the fuzz item's minimal failing program. It judges
every memory error and leak, and nothing else: a call that hangs is its own item's bug (the program stops
there, unjudged), and an item that watched no program run whole is not run, naming the item that stopped it."""

import re
from contextlib import closing
from typing import Any, Mapping

from oracle.grading.grader import ANY_OTHER, Excuse, NotApplicable, NotRun, Outcome, Seen
from oracle.grading.rubric import positive
from oracle.difference import Difference
from oracle.hw3.difference import RETURN
from oracle.hw3.feedback import listing as calls_listed
from oracle.hw3.machine import Call
from oracle.hw3.memcheck import MemcheckResult, battery_programs, memcheck
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.replay import Step, call_on, listing
from oracle.hw3.rules import MEMORY_SAFETY, rule_of
from oracle.hw3.scenarios import BATTERY, scenario_calls
from oracle.hw3.verdicts import Submission, built, item_of

MEMCHECK_OPTIONS = {"timeout": 20.0}  # s one call may take under valgrind
MEMCHECK_LIMITS = {"timeout": positive}
_LOG_LINES = 60
HUNG = "hung"  # what _leak says of a program a call of which never returned
CORRUPTED = " (valgrind did not say where)"  # how _leak's problem ends when the heap was found corrupted


def check_memory_safety(sub: Submission, options: Mapping[str, Any]) -> Outcome:
    if sub.kind != "c":
        raise NotApplicable("valgrind and heap accounting need a C submission")
    built(sub)
    corrupted: Outcome | None = None  # the heap found corrupted: valgrind says where, if it can
    leak: Outcome | None = None  # a block still allocated with no engine: valgrind's pass says where it was allocated
    for name in BATTERY:
        calls, _ = scenario_calls(name)
        with closing(sub.adapter()) as adapter:
            problem = _leak(adapter, name, calls)
        if problem is HUNG:  # the next programs would wait as long again: valgrind's pass says what ran whole
            break
        if problem and problem.endswith(CORRUPTED):
            corrupted = corrupted or Outcome(False, f"{problem} [rule: {MEMORY_SAFETY}]", listing(calls, 0))
        elif problem:
            said = problem.split(": ", 1)[-1].replace("step ", "call ", 1)  # without the program's name
            leak = Outcome(False, f"{problem} [rule: {MEMORY_SAFETY}]", listing(calls, 0),
                           student=f"{said[0].upper()}{said[1:]}.\n\nThe calls:\n\n```c\n{calls_listed(calls, _number(said), 'c')}\n```")
            break
    programs = battery_programs()
    if sub.fuzz_failure is not None:  # the fuzz item's minimal failing program, as its repro.c replays it
        programs[FUZZ_PROGRAM] = (sub.fuzz_failure.calls, sub.fuzz_failure.model)
    assert sub.build is not None
    driver = sub.build.driver or sub.build.lenient_driver
    results = memcheck(driver, programs, timeout=options["timeout"], sandbox=sub.sandbox)
    if leak is not None:
        return _with_sites(leak, results)
    for result in results:
        if not result.clean:
            log = result.log.splitlines()
            shown = log[:_LOG_LINES] + ([f"... ({len(log) - _LOG_LINES} more lines)"] if len(log) > _LOG_LINES else [])
            return Outcome(False, f"valgrind, program {result.name}: {result.summary} [rule: {MEMORY_SAFETY}]", "\n".join(shown),
                           student=_valgrind_words(result, programs.get(result.name, ([], None))[0]))
    if corrupted is not None:
        return corrupted
    engines = [result for result in results  # the battery's programs that make an engine (not only refuse one)
               if result.name in BATTERY and any(c.api == "llm_init" and c.expected for c in programs[result.name][0])]
    if all(result.stopped for result in engines):  # valgrind watched none of them run whole
        raise _not_watched(engines[0])
    return Outcome(True)


FUZZ_PROGRAM = "the fuzzing test's minimal program (repro.c)"
_OURS = re.compile(r"driver(?:_probes)?\.c:|vgpreload|__wrap_|^--- program output ---$")  # the grader's frames, not the student's


def _valgrind_words(result: MemcheckResult, calls: list[Call]) -> str:
    """What valgrind found, for a student: its summary, the calls the program made, and valgrind's report less
    the grader's own frames."""
    log = [line for line in result.log.splitlines() if not _OURS.search(line)]
    log = log[:_LOG_LINES] + ([f"... ({len(log) - _LOG_LINES} more lines)"] if len(log) > _LOG_LINES else [])
    made = f"\n\nWhile making these calls{' (the program of the fuzzing test, repro.c)' if result.name == FUZZ_PROGRAM else ''}:" \
           f"\n\n```c\n{calls_listed(calls, 0, 'c')}\n```" if calls else ""
    report = "\n".join(log).strip()
    return f"Valgrind: {result.summary}.{made}" + (f"\n\nValgrind's report:\n\n```\n{report}\n```" if report else "")


_SITE = re.compile(r"lost [\d,]+ bytes in [\d,]+ blocks, allocated at ([\w.+-]+:\d+)")


def _with_sites(leak: Outcome, results: list[MemcheckResult]) -> Outcome:
    """A leak our heap accounting found, with where valgrind saw the lost blocks allocated (file:line)."""
    sites = list(dict.fromkeys(site for result in results for site in _SITE.findall(result.summary)))
    if not sites:
        return leak
    where = f"allocated at {', '.join(sites)} (valgrind's leak report)"
    message = leak.message.replace(f" [rule: {MEMORY_SAFETY}]", f", {where} [rule: {MEMORY_SAFETY}]")
    student = leak.student.replace(".\n\n", f", {where}.\n\n", 1)
    return Outcome(False, message, leak.details, student=student)


def _number(said: str) -> int:
    """The call number in "call N ...", 0 when there is none."""
    match = re.match(r"call (\d+) ", said)
    return int(match.group(1)) if match else 0


def _not_watched(first: MemcheckResult) -> NotRun:
    """Not run: valgrind saw no memory error, but no engine-making program of the battery ran whole (the first
    stopped where `first` did). That call's item must fail for it (an Excuse), else this item fails."""
    owner = item_of(rule_of(Difference(RETURN, "", None, None), first.stopped_at)) if first.stopped_at else None
    whose = f"item {owner}" if owner else "the other items"
    failure = Seen(f"valgrind, program {first.name}: stopped at {first.stopped}, and no item failed for it "
                   f"[rule: {MEMORY_SAFETY}]", first.log, elsewhere=False)
    return NotRun(f"could not check its rule: no program of the battery made all its calls ({first.name} "
                  f"stopped at {first.stopped}: that is {whose}'s to judge)", Excuse(frozenset({owner or ANY_OTHER}), failure))


def _leak(adapter: Any, name: str, calls: list[Call]) -> str | None:
    """Runs a battery program; the first crash, or heap block still allocated while there is no engine. A call
    that hangs ends the program unjudged (valgrind's pass then says whether any program ran whole)."""
    engine = None
    for number, call in enumerate(calls, 1):
        try:
            engine, _ = call_on(adapter, Step(call.api, call.args, call.null), engine)
            if call.api == "llm_init" and engine is not None and not call.expected:
                adapter.llm_destroy(engine)  # an engine the spec refuses is the llm_init item's bug, not a leak
                engine = None
            heap = adapter.observe(None).heap if engine is None else None
        except ImplementationFailure as failure:
            if str(failure).startswith("hung"):
                return HUNG
            return f"{name}: step {number} {call}: {failure}" + (CORRUPTED if failure.heap_corrupted else "")
        if heap is not None and heap.live_blocks:
            return f"{name}: step {number} {call}: {heap.live_blocks} heap block(s) ({heap.live_bytes} bytes) still allocated with no engine"
    return None
