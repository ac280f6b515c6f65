"""A few pure-Python modules of a vLLM tree (an unzipped wheel, or an installed vllm), loaded without torch, for
every family that checks a part of vLLM (v1's KV-cache manager, v0's block manager, ...). A family names the
modules it runs for real and gives the few names they need to behave; everything else is stood in.

Those files import the rest of vLLM, and that imports torch. So only the real files are executed, each in a private
namespace: their `import`s of a stood-in top-level package (`vllm`, and whatever else the family names) are answered
from a private table, where a real module is executed the first time it is imported, a module the family gives is
made of the names it gives, and every other name is a stand-in (`StandIn`: any attribute, any call, falsy). The
package `__init__` files never run. The real modules are named `pagedcheck_vllm_N.vllm...` in sys.modules (N one
per copy), never `vllm...`, so two copies (a release and a patched one) load side by side in one process and an
installed vllm is never shadowed.

    tree = WheelModules(vllm_root(folder), real=lambda name: name.startswith("vllm.core."), stood_in=("vllm",),
                        given={"vllm.utils": {"cdiv": lambda a, b: -(-a // b)}})
    tree.load("vllm.core.block_manager")  # executed now, with every vllm.core module it imports
"""

import builtins
import importlib.util
import itertools
import sys
import types
from pathlib import Path
from typing import Any, Callable, Collection, Mapping

_copies = itertools.count(1)


class VllmNotFound(ValueError):
    """The folder holds no vLLM tree with the modules a family needs; the message says what is missing."""


class StandIn:
    """A name from the part of vLLM (or torch) that is not loaded: every attribute and call is another
    stand-in, it is false, empty and equal only to itself, and it can be a base class (it adds nothing)."""

    def __init__(self, name: str):
        self._name = name
        self._attributes: dict[str, StandIn] = {}

    def __getattr__(self, attribute: str) -> "StandIn":
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return self._attributes.setdefault(attribute, StandIn(f"{self._name}.{attribute}"))

    def __call__(self, *args: Any, **kwargs: Any) -> "StandIn":
        return StandIn(f"{self._name}()")

    def __mro_entries__(self, bases: tuple) -> tuple:
        return ()

    def __getitem__(self, key: Any) -> "StandIn":
        return self

    def __or__(self, other: Any) -> "StandIn":
        return self

    __ror__ = __or__

    def __bool__(self) -> bool:
        return False

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"<stand-in {self._name}>"


class StandInModule(types.ModuleType):
    """A module not loaded: a package (its submodules can be imported) whose names not given are stand-ins."""

    def __init__(self, name: str, given: Mapping[str, object] | None = None):
        super().__init__(name)
        self.__path__: list[str] = []
        self._names: dict[str, StandIn] = {}
        self.__dict__.update(given or {})

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return self._names.setdefault(attribute, StandIn(f"{self.__name__}.{attribute}"))


def vllm_root(directory: str) -> Path:
    """The folder that holds `vllm/`: `directory` itself, or (empty) the installed vllm's; VllmNotFound."""
    if not directory:
        spec = importlib.util.find_spec("vllm")  # finds the package without executing it
        if spec is None or not spec.submodule_search_locations:
            raise VllmNotFound("no vllm is installed (give the folder of an unzipped wheel: vllm:DIR)")
        return Path(list(spec.submodule_search_locations)[0]).parent
    root = Path(directory).expanduser()
    if (root / "vllm").is_dir():
        return root
    if root.name == "vllm" and root.is_dir():
        return root.parent
    raise VllmNotFound(f"{directory} holds no vllm/ folder (unzip a vllm wheel there: vllm:DIR)")


def relative(name: str) -> str:
    """The file of module `name` under the tree's root: `vllm/core/block_manager.py`."""
    return name.replace(".", "/") + ".py"


class WheelModules:
    """The modules of one tree under `root`, each real one executed once in its own private namespace. `real`
    says which modules run for real (the names, or a test of a name); `stood_in` names the top-level packages
    whose imports are answered here (the rest come from the interpreter); `given` gives a module's names."""

    def __init__(self, root: Path, real: Collection[str] | Callable[[str], bool], stood_in: Collection[str],
                 given: Mapping[str, Mapping[str, object]] | None = None):
        self.root, self.stood_in, self.given = root, tuple(stood_in), dict(given or {})
        self.real = real if callable(real) else frozenset(real).__contains__
        self.modules: dict[str, types.ModuleType] = {}
        self.private = f"pagedcheck_vllm_{next(_copies)}"  # this copy's modules' names in sys.modules

    def __getitem__(self, name: str) -> types.ModuleType:
        return self.modules[name]

    def path(self, name: str) -> Path:
        return self.root / relative(name)

    def load(self, name: str) -> types.ModuleType:
        """The module `name`: a real one (executed now, the first time), a given one, else a stand-in (made with
        its parents)."""
        if name not in self.modules:
            if self.real(name) and self.path(name).is_file():
                self._execute(name)
            else:
                self.modules[name] = StandInModule(name, self.given.get(name))
                self._link(name)
        return self.modules[name]

    def _execute(self, name: str) -> None:
        module = types.ModuleType(f"{self.private}.{name}")  # dataclasses look their class's module up by name
        sys.modules[module.__name__] = module
        module.__file__ = str(self.path(name))
        module.__builtins__ = {**vars(builtins), "__import__": self._import}
        self.modules[name] = module
        self._link(name)
        source = self.path(name).read_text(encoding="utf-8")
        exec(compile(source, str(self.path(name)), "exec"), module.__dict__)  # noqa: S102 (the target's own code)

    def _link(self, name: str) -> None:
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(self.load(parent), child, self.modules[name])

    def _import(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        top = name.partition(".")[0]
        if level or top not in self.stood_in:
            return builtins.__import__(name, globals, locals, fromlist, level)
        module = self.load(name)
        return module if fromlist else self.load(top)
