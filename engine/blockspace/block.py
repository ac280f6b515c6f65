"""Block: one physical KV block on a device, with the number of block tables that hold it."""

from dataclasses import dataclass
from enum import Enum


class Device(Enum):
    GPU = "gpu"
    CPU = "cpu"


@dataclass(eq=False)
class Block:
    device: Device
    block_id: int
    ref_count: int = 0
