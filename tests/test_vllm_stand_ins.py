"""oracle/prefix/vllm_loader.py without a vLLM wheel: the stand-ins for what it does not load, and where it looks
for a vllm/ folder."""

import pytest

from oracle.prefix.vllm_loader import StandIn, StandInModule, VllmModules, VllmNotFound, vllm_root


def test_a_stand_in_is_false_empty_and_gives_stand_ins():
    torch = StandInModule("torch")
    dtype = torch.float16
    assert isinstance(dtype, StandIn) and torch.float16 is dtype and not dtype and len(dtype) == 0
    assert list(dtype) == [] and dtype[3] is dtype and (dtype | None) is dtype and (None | dtype) is dtype
    assert isinstance(dtype(1, x=2), StandIn) and repr(dtype.itemsize) == "<stand-in torch.float16.itemsize>"

    class Base(dtype):  # a stand-in can be a base class, adding nothing
        pass

    assert Base.__mro__ == (Base, object)
    with pytest.raises(AttributeError):
        torch.__wrapped__


def test_the_vllm_folder_is_found_in_a_wheel_folder_or_named_itself(tmp_path):
    (tmp_path / "vllm").mkdir()
    assert vllm_root(str(tmp_path)) == tmp_path and vllm_root(str(tmp_path / "vllm")) == tmp_path
    with pytest.raises(VllmNotFound, match="has no vllm/v1/core"):
        VllmModules(str(tmp_path))  # a folder without the v1 KV-cache manager
