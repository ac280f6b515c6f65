"""vLLM's v0 block manager (0.6.3.post1: vllm/core/block_manager.py over vllm/core/block/) loaded from an
unzipped wheel, `--impl vllm:DIR`, without torch: those files run on the standard library but import a few names
from vllm.utils, vllm.sequence and vllm.logger, whose own imports need torch. Stand-ins of ours take their place
(vLLM's names, our code); the packages vllm and vllm.core are made empty, so their __init__ files never run.
They are registered under vLLM's names only while the files load: an installed vllm is put back after."""

import enum
import importlib
import sys
import types
from pathlib import Path


def _module(name: str, **names: object) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(names)
    return module


def load(folder: str) -> type:
    """The SelfAttnBlockSpaceManager class of the vLLM tree in `folder`; ValueError with a one-line reason."""
    root = Path(folder)
    if not (root / "vllm" / "core" / "block_manager.py").is_file():
        raise ValueError(f"{folder}: no vllm/core/block_manager.py (unzip vLLM 0.6.3.post1's wheel there)")
    before = {n: m for n, m in sys.modules.items() if n == "vllm" or n.startswith("vllm.")}  # an installed vllm's
    for name in before:
        del sys.modules[name]
    status = enum.Enum("SequenceStatus", "WAITING RUNNING SWAPPED FINISHED_STOPPED")
    stand_ins = {
        "vllm.utils": _module("vllm.utils", Device=enum.Enum("Device", "GPU CPU"), cdiv=lambda a, b: -(-a // b),
                              chunk_list=lambda items, size: [items[i:i + size] for i in range(0, len(items), size)],
                              STR_NOT_IMPL_ENC_DEC_PREFIX_CACHE="", STR_NOT_IMPL_ENC_DEC_SWA=""),
        "vllm.sequence": _module("vllm.sequence", Sequence=object, SequenceGroup=object, SequenceStatus=status),
        "vllm.logger": _module("vllm.logger", init_logger=lambda name: __import__("logging").getLogger(name)),
    }
    for package in ("vllm", "vllm.core", "vllm.core.block"):
        sys.modules[package] = _module(package, __path__=[str(root.joinpath(*package.split(".")))])
    sys.modules.update(stand_ins)
    try:
        return importlib.import_module("vllm.core.block_manager").SelfAttnBlockSpaceManager
    except Exception as exc:
        raise ValueError(f"{folder}: vLLM's block manager does not load here: {type(exc).__name__}: {exc}") from None
    finally:  # nothing of ours stays registered as vllm: the loaded modules keep what they imported
        for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
            del sys.modules[name]
        sys.modules.update(before)
