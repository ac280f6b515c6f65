"""The failing call of a fuzz run, replayed for its picture, for any family whose `state_tables` hook draws
a machine's state as tables (oracle/tables.py).

The one program the fuzz shrank is run again through the family's driver (oracle/shrink.py, replay) on a
fresh adapter whose calls are watched: every time the machine observes the implementation, the family's
hook draws both sides (the model's state, the implementation's as observed); facts the machine derives from
an observation after making it (what each block holds) are drawn as callables, read when the machine next
calls the implementation. The state before the failing call is the last one drawn before the
implementation's last call other than an observation, and the state after is drawn when the machine is torn
down, right after the failure. The replay is one more run of the same program: the same failure, or no
picture (None) when it does not fail again. A family's own replay of a directed program can be watched the
same way while it runs (Watch.adapter, Watch.scene: the prefix family's directed items).
"""

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable

from oracle.program import Program
from oracle.shrink import replay
from oracle.stats import RunStats
from oracle.tables import State, settled

Sides = tuple[State, State | None]  # expected (the model), actual (the implementation; None: unreadable)
# a family's hook: (a machine, what the implementation's observe just returned or None) -> its state, both sides
StateTables = Callable[[Any, Any], Sides]


@dataclass(frozen=True)
class Scene:
    """A failing call and the state around it; a family whose checks record the failing step themselves (the
    model and the observation) gives it as a Scene too (its `picture` hook), with what it knows besides."""

    call: str  # the failing call, in the family's words ("" when the failure does not say)
    line: int  # the program line whose step made the failing call, counted after `state = ...()`
    after: Sides
    before: Sides | None  # None: the failure came before anything was observed
    rule: str = ""  # the rule the failing call broke, where the failure names it
    calls: tuple[tuple[str, str], ...] = ()  # each call made up to the failing one, with what the model said it returns
    step: int = 0  # the failing call's number in `calls` (1-based; 0: not listed)
    notes: tuple[str, ...] = ()  # what the reader should know about the picture (what was not read or compared)
    broken: tuple[str, ...] = ()  # what the implementation broke that no table shows


class Watch:
    """What a replay saw: the latest state drawn, the one before the implementation's latest call. `machine`
    is what the family's hook draws (a state machine, or any replay with the same attributes)."""

    def __init__(self, draw: StateTables, machine: Any = None):
        self.draw, self.machine, self.busy = draw, machine, False
        self.latest: Sides | None = None
        self.before: Sides | None = None
        self.after: Sides | None = None

    def adapter(self, adapter: Any) -> "_Watched":
        """The adapter, watched: its observations drawn, its other calls marking the state before them."""
        return _Watched(adapter, self)

    def settle(self) -> None:
        """Reads the latest drawing's derived cells: the machine has finished with that observation once it
        calls the implementation again (or fails)."""
        if self.latest is not None:
            self.latest = (settled(self.latest[0]), settled(self.latest[1]))

    def settled_sides(self) -> Sides | None:
        drawn = self.sides()
        return None if drawn is None else (settled(drawn[0]), settled(drawn[1]))

    def scene(self, call: str, line: int = 0) -> Scene | None:
        """The failing call `call`, just made: the state now, and the state before it (None: not drawable)."""
        after = self.settled_sides()
        return None if after is None else Scene(call, line, after, self.before)

    def sides(self, seen: Any = None) -> Sides | None:
        """Both sides drawn now; `seen`: what the implementation's observe just returned (None: the hook
        observes it itself). Cells drawn as callables are read by `settle`."""
        if self.machine is None or self.busy:
            return None
        self.busy = True  # an observation the hook makes itself is not drawn again
        try:
            return self.draw(self.machine, seen)
        except Exception:  # noqa: BLE001  (the state cannot be read: a picture without it)
            return None
        finally:
            self.busy = False


class _Watched:
    """An adapter whose observations are drawn and whose other calls mark the state before them."""

    def __init__(self, adapter: Any, watch: Watch):
        self._adapter, self._watch = adapter, watch

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._adapter, name)
        if not callable(value) or name == "close":
            return value
        watch = self._watch

        def called(*args: Any, **kwargs: Any) -> Any:
            if not watch.busy:
                watch.settle()
            if name != "observe" and not watch.busy:
                watch.before = watch.latest
            result = value(*args, **kwargs)
            if name == "observe" and not watch.busy:
                watch.latest = watch.sides(result) or watch.latest
            return result

        return called


class _WatchedFactory:
    """The adapter factory, making watched adapters; what a machine reads of it (a domain, a policy) is the
    factory's own."""

    def __init__(self, factory: Callable[[], Any], watch: Watch):
        self._factory, self._watch = factory, watch

    def __call__(self) -> _Watched:
        return _Watched(self._factory(), self._watch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._factory, name)


def scene_of(machine_for: Callable[..., type], factory: Callable[[], Any], program: Program,
             draw: StateTables) -> tuple[Scene, BaseException] | None:
    """Replays a program (the fuzz's shrunk one, as data) through a driver on fresh adapters from `factory`; the
    scene of its failure and the failure, or None when it does not fail."""
    watch = Watch(draw)
    machine = machine_for(_WatchedFactory(factory, watch), RunStats())
    driver = machine.make_driver(machine.adapter_factory(), machine.stats, machine.adapter_factory)
    watch.machine = SimpleNamespace(driver=driver)  # what the family's hook draws: a machine's driver
    try:
        failure, at, _ = replay(machine, program, driver, close=False)
        watch.after = watch.settled_sides()
    finally:
        driver.impl.close()
    if failure is None or watch.after is None:
        return None
    return Scene(getattr(failure, "call", ""), at + 1, watch.after, watch.before), failure
