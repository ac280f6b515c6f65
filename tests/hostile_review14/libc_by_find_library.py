# Review 14, fairness: a correct block manager that reaches the C library through ctypes with the usual idiom,
# ctypes.CDLL(ctypes.util.find_library("c")) (a student's way to memset or memmove a buffer). Nothing else changes: our
# engine's block manager, correct. On a plain machine find_library("c") answers "libc.so.6".
import ctypes as _review14_ctypes
import ctypes.util as _review14_ctypes_util

_REVIEW14_LIBC = _review14_ctypes.CDLL(_review14_ctypes_util.find_library("c"))
assert _REVIEW14_LIBC.abs(-14) == 14
