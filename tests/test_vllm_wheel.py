"""oracle/vllm_wheel.py (and the prefix family's use of it) without a vLLM wheel: the stand-ins for what it does
not load, the names a family gives, real modules run on first import in a private namespace, and where it looks
for a vllm/ folder."""

import sys

import pytest

from oracle.prefix.vllm_loader import VllmModules
from oracle.vllm_wheel import StandIn, StandInModule, VllmNotFound, WheelModules, vllm_root


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
    with pytest.raises(VllmNotFound, match="holds no vllm/ folder"):
        vllm_root(str(tmp_path / "elsewhere"))


def tree(root, files):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_real_modules_run_on_first_import_with_given_names_and_stand_ins(tmp_path):
    tree(tmp_path, {"vllm/__init__.py": "raise RuntimeError('a package __init__ never runs')\n",
                    "vllm/core/a.py": "from vllm.core.b import double\nfrom vllm.utils import cdiv, Other\n"
                                      "import torch\nVALUE = double(cdiv(7, 2))\nOTHER, TORCH = Other, torch.float16\n",
                    "vllm/core/b.py": "def double(x):\n    return 2 * x\n",
                    "vllm/utils.py": "raise RuntimeError('a module not named real never runs')\n"})
    modules = WheelModules(tmp_path, real=lambda name: name.startswith("vllm.core."), stood_in=("vllm", "torch"),
                           given={"vllm.utils": {"cdiv": lambda a, b: -(-a // b)}})
    a = modules.load("vllm.core.a")
    assert a.VALUE == 8 and isinstance(a.OTHER, StandIn) and isinstance(a.TORCH, StandIn)
    assert modules["vllm.core.b"].double(3) == 6 and modules["vllm"].core.a is a
    assert a.__name__ == f"{modules.private}.vllm.core.a" and sys.modules[a.__name__] is a
    assert not any(name == "vllm" or name.startswith("vllm.") for name in sys.modules)


def test_two_copies_of_one_tree_are_two_sets_of_modules(tmp_path):
    tree(tmp_path, {"vllm/core/a.py": "class Manager:\n    pass\n"})
    first, second = (WheelModules(tmp_path, ("vllm.core.a",), ("vllm",)) for _ in range(2))
    assert first.load("vllm.core.a").Manager is not second.load("vllm.core.a").Manager
