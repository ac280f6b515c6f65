"""vLLM's v0 block manager (0.6.3.post1: vllm/core/block_manager.py over vllm/core/block/) from an unzipped
wheel, `--impl vllm:DIR`, loaded without torch by the core's loader (oracle/vllm_wheel.py). Every file under
vllm/core runs for real; of what they import from vllm.utils and vllm.sequence, the names they use get stand-ins
of ours that behave (vLLM's names, our code), and every other name of vLLM is a plain stand-in."""

import enum

from oracle.vllm_wheel import VllmNotFound, WheelModules, vllm_root

GIVEN = {
    "vllm.utils": {"Device": enum.Enum("Device", "GPU CPU"), "cdiv": lambda a, b: -(-a // b),
                   "chunk_list": lambda items, size: [items[i:i + size] for i in range(0, len(items), size)]},
    "vllm.sequence": {"SequenceStatus": enum.Enum("SequenceStatus", "WAITING RUNNING SWAPPED FINISHED_STOPPED")},
}


def load(folder: str) -> type:
    """The SelfAttnBlockSpaceManager class of the vLLM tree in `folder`; ValueError with a one-line reason."""
    modules = WheelModules(vllm_root(folder), lambda name: name.startswith("vllm.core."), ("vllm",), GIVEN)
    if not modules.path("vllm.core.block_manager").is_file():
        raise VllmNotFound(f"{folder}: no vllm/core/block_manager.py (unzip vLLM 0.6.3.post1's wheel there)")
    try:
        return modules.load("vllm.core.block_manager").SelfAttnBlockSpaceManager
    except Exception as exc:
        raise ValueError(f"{folder}: vLLM's block manager does not load here: {type(exc).__name__}: {exc}") from None
