"""Load vLLM v1's KV-cache modules from a vLLM tree (an installed vllm or an unzipped wheel) without torch.

The KV-cache manager (`vllm/v1/core/`: kv_cache_manager, kv_cache_coordinator, single_type_kv_cache_manager,
block_pool, kv_cache_utils, kv_cache_metrics, and `vllm/v1/kv_cache_interface.py`) is pure Python, but the
files import the rest of vLLM, and that imports torch. So only those files are executed, each in a private
namespace: their `import`s are answered from a private table, where the real files are these modules and
every other name of vLLM (and torch, cbor2) is a stand-in (`StandIn`: any attribute, any call, falsy, never
used on the paths the prefix machine drives). The real modules are named `pagedcheck_vllm_N.vllm...` (N one
per copy), never `vllm...`, so two copies (a release and a patched copy) load side by side in one process and
an installed vllm is never shadowed.
"""

import builtins
import importlib.util
import itertools
import sys
import types
from pathlib import Path
from typing import Any

# the files executed for real, in an order that satisfies their imports of one another
REAL_MODULES = (
    "vllm.utils.math_utils",
    "vllm.v1.kv_cache_layout",
    "vllm.v1.kv_cache_spec_registry",
    "vllm.v1.kv_cache_interface",
    "vllm.v1.core.kv_cache_metrics",
    "vllm.v1.core.kv_cache_utils",
    "vllm.v1.core.block_pool",
    "vllm.v1.core.single_type_kv_cache_manager",
    "vllm.v1.core.kv_cache_coordinator",
    "vllm.v1.core.kv_cache_manager",
)
REQUIRED = ("vllm.v1.core.kv_cache_manager", "vllm.v1.core.block_pool", "vllm.v1.core.kv_cache_utils",
            "vllm.v1.kv_cache_interface")
_copies = itertools.count(1)
STOOD_IN = ("vllm", "torch", "cbor2", "numpy", "msgspec", "xxhash")  # top-level packages never executed


class VllmNotFound(ValueError):
    """The directory holds no vLLM tree with the v1 KV-cache modules; the message says what is missing."""


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
    def __init__(self, name: str):
        super().__init__(name)
        self.__path__: list[str] = []  # a package, so its submodules can be imported
        self._names: dict[str, StandIn] = {}

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


class VllmModules:
    """The KV-cache modules of one vLLM tree, each executed once in its own private namespace."""

    def __init__(self, directory: str):
        self.root = vllm_root(directory)
        self.modules: dict[str, types.ModuleType] = {}
        self.private = f"pagedcheck_vllm_{next(_copies)}"  # this copy's modules' names in sys.modules
        missing = [name for name in REQUIRED if not self._path(name).is_file()]
        if missing:
            raise VllmNotFound(f"{self.root} has no {', '.join(self._relative(n) for n in missing)} "
                               "(a vLLM release with the v1 KV-cache manager is needed)")
        for name in REAL_MODULES:
            if self._path(name).is_file():
                self._execute(name)

    def __getitem__(self, name: str) -> types.ModuleType:
        return self.modules[name]

    @staticmethod
    def _relative(name: str) -> str:
        return name.replace(".", "/") + ".py"

    def _path(self, name: str) -> Path:
        return self.root / self._relative(name)

    def _execute(self, name: str) -> None:
        module = types.ModuleType(f"{self.private}.{name}")  # dataclasses look their class's module up by name
        sys.modules[module.__name__] = module
        module.__file__ = str(self._path(name))
        module.__builtins__ = {**vars(builtins), "__import__": self._import}
        self.modules[name] = module
        self._link(name)
        source = self._path(name).read_text(encoding="utf-8")
        exec(compile(source, str(self._path(name)), "exec"), module.__dict__)  # noqa: S102 (the target's own code)

    def _module(self, name: str) -> types.ModuleType:
        """The module `name`: a real one loaded here, else a stand-in (made with its parents)."""
        if name not in self.modules:
            self.modules[name] = StandInModule(name)
            self._link(name)
        return self.modules[name]

    def _link(self, name: str) -> None:
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(self._module(parent), child, self.modules[name])

    def _import(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        top = name.partition(".")[0]
        if level or top not in STOOD_IN:
            return builtins.__import__(name, globals, locals, fromlist, level)
        module = self._module(name)
        return module if fromlist else self._module(top)
