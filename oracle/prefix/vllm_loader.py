"""vLLM v1's KV-cache modules from a vLLM tree (an installed vllm or an unzipped wheel), loaded without torch by
the core's loader (oracle/vllm_wheel.py): these are the prefix family's facts about them.

The KV-cache manager (`vllm/v1/core/`: kv_cache_manager, kv_cache_coordinator, single_type_kv_cache_manager,
block_pool, kv_cache_utils, kv_cache_metrics, and `vllm/v1/kv_cache_interface.py`) is pure Python; every other
name of vLLM (and torch, cbor2, ...) it imports is a stand-in, never used on the paths the prefix machine drives.
"""

from oracle.vllm_wheel import VllmNotFound, WheelModules, relative, vllm_root

# the files executed for real (each one's imports of another run it first, whatever the order)
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
STOOD_IN = ("vllm", "torch", "cbor2", "numpy", "msgspec", "xxhash")  # top-level packages never executed


class VllmModules(WheelModules):
    """The KV-cache modules of one vLLM tree (`directory`; empty: the installed vllm); VllmNotFound."""

    def __init__(self, directory: str):
        super().__init__(vllm_root(directory), REAL_MODULES, STOOD_IN)
        missing = [name for name in REQUIRED if not self.path(name).is_file()]
        if missing:
            raise VllmNotFound(f"{self.root} has no {', '.join(relative(n) for n in missing)} "
                               "(a vLLM release with the v1 KV-cache manager is needed)")
        for name in REAL_MODULES:
            self.load(name)

