"""A native driver's signals (oracle/native/driver_main.c keep_own_handlers, oracle/SANDBOX.md "A C run's signals"):
once the driver's own handlers are in place, its seccomp filter refuses every new signal action and signal stack
(EPERM) whatever symbol reaches the call, asking for the current ones still works, a crash still ends the process by
its signal, and under valgrind (no such filter) a submission's action is valgrind's to emulate. Real gcc, a real
driver in the sandbox, the reference C with a few lines added to llm_init."""

from pathlib import Path

import pytest

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.hw3.observation import ImplementationFailure
from tests.conftest import REFERENCE_C

# glibc's exported aliases: names the build's list (oracle/native/refusal.py SIGNAL_HANDLERS) does not hold, so
# the object builds and what it meets is the kernel's answer
ASKS = r"""
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static void quiet(int sig)
{
    (void)sig;
}

static void say(const char *what, int returned)
{
    printf("%s: %d %s\n", what, returned, returned == 0 ? "ok" : errno == EPERM ? "EPERM" : "other");
}

void ask_for_signals(void)
{
    struct sigaction mine, old;
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = quiet;
    sigemptyset(&mine.sa_mask);
    say("new SIGSEGV action", __sigaction(SIGSEGV, &mine, NULL));
    say("new SIGUSR1 action", __sigaction(SIGUSR1, &mine, NULL));
    mine.sa_handler = SIG_IGN;
    say("SIGALRM ignored", __sigaction(SIGALRM, &mine, NULL));
    say("current SIGSEGV action", __sigaction(SIGSEGV, NULL, &old));
    static char stack[1 << 16];
    stack_t mine_stack = {.ss_sp = stack, .ss_size = sizeof stack}, now;
    say("new signal stack", sigaltstack(&mine_stack, NULL));
    say("current signal stack", sigaltstack(NULL, &now));
}
"""

HEAD = "#define _GNU_SOURCE\n#include <errno.h>\n#include <signal.h>\n#include <stdio.h>\n"
DEEP = """
int deep(int n)
{
    volatile char frame[4096];
    frame[0] = (char)n;
    return n > (1 << 30) ? 0 : deep(n + 1) + frame[0];
}
"""


def _driver(workdir: Path, name: str, in_init: str, extra: str = "") -> Path:
    """The reference C with `in_init` first in llm_init and `extra` (declared before, defined after) added."""
    declared = "void ask_for_signals(void);\nint deep(int n);\n" if extra else ""
    source = HEAD + declared + REFERENCE_C.read_text() + extra
    marker = "LLMEngine *llm_init(void *pool_addr, size_t pool_size)\n{"
    assert marker in source
    source = source.replace(marker, marker + f"\n    {in_init}", 1)
    folder = workdir / name
    folder.mkdir()
    (folder / "llm_memory.c").write_text(source)
    result = build(folder / "llm_memory.c", workdir / f"{name}-build")
    assert result.ok and result.driver is not None, result.message
    return result.driver


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("signals")


@pytest.fixture(scope="module")
def asking(workdir: Path) -> Path:
    return _driver(workdir, "asking", "ask_for_signals();", ASKS + DEEP)


def test_natively_no_signal_action_or_stack_changes_whatever_name_reaches_the_call(asking: Path) -> None:
    """__sigaction (glibc's alias of sigaction, review 14's fault_caught_by_alias) asked for a SIGSEGV handler, a
    SIGUSR1 handler, SIGALRM ignored and a signal stack of its own: each refused with EPERM; asking for the current
    action and stack answers; llm_init then goes on to return its engine."""
    adapter = CAdapter(asking)
    try:
        assert adapter.llm_init(4096) is not None
        assert adapter.output.splitlines() == [
            "new SIGSEGV action: -1 EPERM", "new SIGUSR1 action: -1 EPERM", "SIGALRM ignored: -1 EPERM",
            "current SIGSEGV action: 0 ok", "new signal stack: -1 EPERM", "current signal stack: 0 ok"], adapter.output
    finally:
        adapter.close()


def test_under_valgrind_the_driver_has_no_such_filter_and_runs_clean(asking: Path, tmp_path: Path) -> None:
    """valgrind makes rt_sigaction calls of its own on the client's behalf (and to die of a signal), so a run under
    it gets no such filter: the same asks succeed there (valgrind emulates them), and the run ends clean."""
    from oracle.native import valgrind

    adapter = valgrind.valgrind_adapter(CAdapter, asking, tmp_path / "valgrind.log")
    engine = adapter.llm_init(4096)
    assert engine is not None
    assert adapter.llm_destroy(engine) == 0
    said = adapter.output.splitlines()
    verdict = valgrind.finish(adapter, tmp_path / "valgrind.log")
    assert said[:3] == ["new SIGSEGV action: 0 ok", "new SIGUSR1 action: 0 ok", "SIGALRM ignored: 0 ok"], said
    assert verdict.clean, verdict.log[-2000:]


@pytest.mark.parametrize("name, crash, signal_name", [
    ("fault", "*(volatile int *)(pool_size & 16) = 1;", "SIGSEGV"),
    ("raised", "raise(SIGSEGV);", "SIGSEGV"),
    ("aborted", "abort();", "SIGABRT"),
    ("overflow", "if (deep(1) == 0) return NULL;", "SIGSEGV"),
])
def test_a_crash_still_ends_the_process_by_its_signal(workdir: Path, name: str, crash: str, signal_name: str) -> None:
    """The driver's handlers die of the signal without changing any action (the filter would refuse that): a fault
    returned to with the signal blocked faults again and the kernel ends the process; a raised SIGSEGV reads
    address 0 with SIGSEGV blocked; SIGABRT's action is reset on delivery. Each crash is the call's failure, named
    by its signal."""
    adapter = CAdapter(_driver(workdir, name, crash, ASKS + DEEP), timeout=30.0)
    try:
        with pytest.raises(ImplementationFailure):
            adapter.llm_init(4096)
        assert adapter.failure is not None and signal_name in adapter.failure, adapter.failure
    finally:
        adapter.close()
