"""The ledger's judgement of the kernel's own access to the heap (oracle/native/ledger.py kernel_access,
oracle/native/kernel_access.py), on plain values: a system call the driver's filter hands over because an argument
lies in the fence's span. No process: which range is a stray, what is counted, which calls go on and which are
refused (default deny: a register in the span the table cannot judge)."""

import errno

from oracle.native.kernel_access import access
from oracle.native.ledger import (
    CONTINUE, MAP_ANONYMOUS, MAP_FIXED_NOREPLACE, MAP_PRIVATE, MAP_SHARED, MMAP, MPROTECT, PAGE, PROT_READ, PROT_WRITE,
    SPAN_END, SPAN_START, STRAYS_PER_CALL, Ledger,
)

RW = PROT_READ | PROT_WRITE
READ, WRITE, FSTAT, GETRANDOM, CLOSE, IOCTL, FCNTL, RT_SIGRETURN, OPENAT, PRCTL = 0, 1, 5, 318, 3, 16, 72, 15, 257, 157
ARCH_PRCTL, POLL, SELECT, EPOLL_WAIT, FUTEX, PREAD64, LSEEK, SCHED_SETPARAM, EXIT_GROUP = 158, 7, 23, 232, 202, 17, 8, 142, 231
PR_SET_NAME, PR_GET_NAME, FUTEX_WAIT, FUTEX_WAKE_OP, FUTEX_PRIVATE_FLAG = 15, 16, 0, 5, 128
AT_FDCWD = 2**64 - 100


def page(n: int) -> int:
    return SPAN_START + n * PAGE


def with_blocks(*blocks: tuple[int, int]) -> Ledger:
    """A ledger holding live blocks (first page, pages), granted as the driver grants them."""
    ledger = Ledger()
    for first, pages in blocks:
        assert ledger.answer(MMAP, (page(first), pages * PAGE, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                                    2**64 - 1, 0)) == CONTINUE
    ledger.call_started()
    return ledger


def test_a_write_of_a_live_blocks_bytes_is_no_stray_and_goes_on() -> None:
    ledger = with_blocks((1, 2))
    assert ledger.answer(WRITE, (5, page(1), 2 * PAGE, 0, 0, 0)) == CONTINUE
    assert ledger.answer(READ, (5, page(3) - 4, 4, 0, 0, 0)) == CONTINUE  # its last bytes
    assert ledger.strays == 0


def test_a_write_from_past_a_blocks_end_is_its_guard_page_counted_as_a_faults_is() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    assert ledger.answer(WRITE, (5, page(2), 4, 0, 0, 0)) == CONTINUE  # kernel_reads_past: l2[16] on the guard page
    assert (ledger.strays, ledger.faulted) == (1, [page(2) // PAGE])


def test_a_range_that_runs_off_a_block_counts_the_first_page_the_kernel_cannot_reach() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    assert ledger.answer(READ, (5, page(1) + PAGE - 8, 16, 0, 0, 0)) == CONTINUE  # 8 bytes in, 8 on the guard
    assert ledger.faulted == [page(2) // PAGE]


def test_the_length_is_the_kernels_not_the_first_byte_alone() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    assert ledger.answer(FSTAT, (5, page(2) - 16, 0, 0, 0, 0)) == CONTINUE  # 144 bytes from 16 before the guard
    assert ledger.strays == 1
    ledger.call_started()
    assert ledger.answer(GETRANDOM, (page(4) - 8, 8, 0, 0, 0, 0)) == CONTINUE  # exactly the last 8 bytes: none
    assert ledger.strays == 1


def test_a_freed_blocks_page_read_by_the_kernel_is_a_stray() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    assert ledger.answer(MPROTECT, (page(3), PAGE, 0, 0, 0, 0)) == CONTINUE  # the free
    assert ledger.answer(WRITE, (5, page(3) + 100, 4, 0, 0, 0)) == CONTINUE
    assert ledger.faulted == [page(3) // PAGE]


def test_a_page_is_counted_once_whether_the_kernel_or_a_fault_reaches_it_first() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    ledger.answer(WRITE, (5, page(2), 4, 0, 0, 0))
    ledger.answer(WRITE, (5, page(2) + 8, 4, 0, 0, 0))
    assert ledger.strays == 1
    # the CPU's fault on it afterwards: the driver's mprotect, then its shared mapping; nothing counted again
    assert ledger.answer(MPROTECT, (page(2), PAGE, PROT_READ, 0, 0, 0)) == CONTINUE
    assert ledger.answer(MMAP, (page(2), PAGE, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, 2**64 - 1,
                                0)) == CONTINUE
    assert ledger.strays == 1
    # and a range that passes the counted page reads on to the next page no block holds
    assert ledger.answer(READ, (5, page(1), 4 * PAGE + 1, 0, 0, 0)) == CONTINUE
    assert ledger.faulted == [page(2) // PAGE, page(4) // PAGE]


def test_a_huge_length_costs_the_walk_only_the_blocks_it_passes() -> None:
    ledger = with_blocks(*((1 + 2 * i, 1) for i in range(100)))
    assert ledger.answer(WRITE, (5, page(1), 2**63, 0, 0, 0)) == CONTINUE
    assert ledger.faulted == [page(2) // PAGE]  # the first guard page stops the kernel's copy
    assert ledger.answer(WRITE, (5, SPAN_START - 8, 2**64 - 1, 0, 0, 0)) == CONTINUE  # from below the span: clipped
    assert ledger.faulted == [page(0) // PAGE, page(2) // PAGE]


def test_a_pointer_of_length_0_names_nothing_and_a_register_the_call_does_not_take_is_no_address() -> None:
    ledger = with_blocks((1, 1))
    assert ledger.answer(WRITE, (5, page(1), 0, page(9), 0, 0)) == CONTINUE
    assert ledger.answer(READ, (5, page(2), 0, 0, 0, 0)) == CONTINUE  # nothing read: no byte touched
    assert ledger.strays == 0


def test_only_a_calls_own_pointer_parameters_name_memory_not_the_registers_it_does_not_take() -> None:
    ledger = with_blocks((1, 1))
    assert ledger.answer(RT_SIGRETURN, (page(2), page(3), 0, 0, 0, 0)) == CONTINUE  # left over from the handler
    assert ledger.answer(EXIT_GROUP, (0, page(3), page(3), 0, 0, 0)) == CONTINUE  # takes one register
    assert ledger.answer(WRITE, (5, page(1), 4, page(6), page(7), 0)) == CONTINUE  # write takes three
    assert ledger.answer(FCNTL, (5, 1, page(8), 0, 0, 0)) == CONTINUE  # F_GETFD: its variadic argument unused
    assert ledger.answer(FUTEX, (page(1), FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, 0, page(9), 0)) == CONTINUE  # no uaddr2
    assert ledger.strays == 0
    assert ledger.answer(OPENAT, (AT_FDCWD, page(2) + 16, 0, 0, 0, 0)) == CONTINUE  # a path on the guard page
    assert ledger.answer(FCNTL, (5, 5, page(4), 0, 0, 0)) == CONTINUE  # F_GETLK: a struct flock
    assert ledger.faulted == [page(2) // PAGE, page(4) // PAGE]


def test_a_register_in_the_span_the_table_takes_as_a_value_is_refused_and_judged_by_its_first_byte() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    # review 16's proc_self_mem_past: pread of /proc/self/mem at the offset &l2[16] (the guard page), buffer elsewhere
    assert ledger.answer(PREAD64, (5, 0x7FFF0000, 4, page(2), 0, 0)) == errno.EPERM
    assert ledger.faulted == [page(2) // PAGE]
    assert ledger.answer(LSEEK, (5, page(1) + 8, 0, 0, 0, 0)) == errno.EPERM  # a live block's address: refused alone
    assert ledger.answer(WRITE, (page(7), page(1), 4, 0, 0, 0)) == errno.EPERM  # a descriptor of that value
    assert ledger.answer(CLOSE, (page(1), 0, 0, 0, 0, 0)) == errno.EPERM
    assert ledger.faulted == [page(2) // PAGE, page(7) // PAGE]


def test_a_call_the_table_does_not_know_is_refused_whatever_register_names_the_span() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    # review 16's untabled_call_past: sched_setparam(0, &l2[16]) copies an int from the guard page
    assert ledger.answer(SCHED_SETPARAM, (0, page(2), 0, 0, 0, 0)) == errno.EPERM
    assert ledger.faulted == [page(2) // PAGE]
    assert ledger.answer(SCHED_SETPARAM, (0, page(1) + 64, 0, 0, 0, 0)) == errno.EPERM  # live: refused, not counted
    assert ledger.answer(IOCTL, (5, 0x5401, page(3), 0, 0, 0)) == errno.EPERM  # TCGETS: a legacy number, no size
    assert ledger.answer(FCNTL, (5, 0x4242, page(3), 0, 0, 0)) == errno.EPERM  # a command the table does not know
    assert ledger.answer(FUTEX, (page(1), 77, 0, 0, 0, 0)) == errno.EPERM  # an operation it does not know
    assert ledger.answer(PRCTL, (4, page(1), 0, 0, 0, 0)) == errno.EPERM  # PR_SET_DUMPABLE takes a value
    assert ledger.faulted == [page(2) // PAGE]
    assert ledger.answer(SCHED_SETPARAM, (0, 0x7FFF0000, 0, 0, 0, 0)) == CONTINUE  # nothing in the span: not ours


def test_an_array_is_judged_by_its_count_times_its_structs_size() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    # review 16's poll_array_past: two struct pollfd from l2[14], the last 8 bytes on the guard page
    assert ledger.answer(POLL, (page(2) - 8, 2, 0, 0, 0, 0)) == CONTINUE
    assert ledger.faulted == [page(2) // PAGE]
    ledger.call_started()
    assert ledger.answer(POLL, (page(4) - 16, 2, 0, 0, 0, 0)) == CONTINUE  # exactly the block's last 16 bytes
    assert ledger.answer(EPOLL_WAIT, (5, page(4) - 24, 2, 0, 0, 0)) == CONTINUE  # two struct epoll_event (12)
    assert ledger.answer(SELECT, (64, page(4) - 8, 0, 0, 0, 0)) == CONTINUE  # 64 descriptors: one long
    assert ledger.strays == 1
    assert ledger.answer(SELECT, (65, 0, page(4) - 8, 0, 0, 0)) == CONTINUE  # 65: two longs, the second past
    assert ledger.answer(EPOLL_WAIT, (5, page(6) - 24, 3, 0, 0, 0)) == CONTINUE  # on page 5, no block's
    assert ledger.faulted == [page(2) // PAGE, page(4) // PAGE, page(5) // PAGE]


def test_a_futex_names_the_words_its_operation_uses() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    assert ledger.answer(FUTEX, (page(1), FUTEX_WAKE_OP, 1, 1, page(3) + 4, 0)) == CONTINUE
    assert ledger.strays == 0
    assert ledger.answer(FUTEX, (page(1), FUTEX_WAKE_OP, 1, 1, page(4), 0)) == CONTINUE  # its second word, past
    assert ledger.faulted == [page(4) // PAGE]


def memory(blocks: dict[int, bytes]):
    """The caller's memory as the grader reads it: `blocks` (address: bytes), and every read recorded."""
    reads: list[tuple[int, int]] = []

    def text_at(address: int, length: int) -> bytes | None:
        reads.append((address, length))
        for start, data in blocks.items():
            if start <= address and address + length <= start + len(data):
                return data[address - start:address - start + length]
        return None
    return text_at, reads


def test_a_string_is_judged_to_its_nul_read_from_the_callers_live_pages_only() -> None:
    ledger = with_blocks((1, 1), (3, 1))
    # review 16's thread_named_from_heap: "llm" in a 4-byte block at its page's end, handed to PR_SET_NAME
    text_at, reads = memory({page(1): bytes(PAGE - 4) + b"llm\0"})
    assert ledger.answer(PRCTL, (PR_SET_NAME, page(2) - 4, 0, 0, 0, 0), text_at=text_at) == CONTINUE
    assert ledger.strays == 0 and reads == [(page(2) - 4, 4)]  # never a byte of the guard page
    text_at, reads = memory({page(1): b"x" * PAGE})  # no NUL before the block's end: the kernel reads on, faults
    assert ledger.answer(OPENAT, (AT_FDCWD, page(2) - 100, 0, 0, 0, 0), text_at=text_at) == CONTINUE
    assert ledger.faulted == [page(2) // PAGE] and reads == [(page(2) - 100, 100)]
    ledger.call_started()
    text_at, _ = memory({page(3): b"y" * PAGE})  # a name without its NUL: the kernel stops at 15 bytes
    assert ledger.answer(PRCTL, (PR_SET_NAME, page(4) - 15, 0, 0, 0, 0), text_at=text_at) == CONTINUE
    assert ledger.strays == 1
    assert ledger.answer(PRCTL, (PR_SET_NAME, page(4) - 14, 0, 0, 0, 0), text_at=text_at) == CONTINUE  # 14, then past
    assert ledger.faulted == [page(2) // PAGE, page(4) // PAGE]


def test_a_string_the_grader_cannot_read_is_refused() -> None:
    ledger = with_blocks((1, 1))
    assert ledger.answer(OPENAT, (AT_FDCWD, page(1), 0, 0, 0, 0)) == errno.EPERM  # no reader
    text_at, _ = memory({})
    assert ledger.answer(PRCTL, (PR_SET_NAME, page(1), 0, 0, 0, 0), text_at=text_at) == errno.EPERM
    assert ledger.strays == 0  # a live block's address: refused, nothing counted


def test_an_operation_names_its_argument_by_the_size_it_encodes_or_takes() -> None:
    assert access(IOCTL, (5, 0x80085401, 77, 0, 0, 0)).ranges == ((77, 8),)  # _IOR('T', 1, 8 bytes)
    assert access(IOCTL, (5, 0x5401, 77, 0, 0, 0)).values == (5, 0x5401, 77)  # TCGETS, a legacy number: a value
    assert access(PRCTL, (PR_SET_NAME, 77, 0, 0, 0, 0)).texts == ((77, 15),)  # a string to its NUL, at most 15
    assert access(PRCTL, (PR_GET_NAME, 77, 0, 0, 0, 0)).ranges == ((77, 16),)  # 16 bytes written
    assert access(ARCH_PRCTL, (0x1003, 77, 0, 0, 0, 0)).ranges == ((77, 8),)  # ARCH_GET_FS writes 8 bytes
    assert access(SCHED_SETPARAM, (1, 2, 3, 4, 5, 6)).values == (1, 2, 3, 4, 5, 6)  # unknown: all six
    ledger = with_blocks((1, 1))
    assert ledger.answer(IOCTL, (5, 0x80085401, page(2) - 4, 0, 0, 0)) == CONTINUE  # 4 bytes in, 4 past
    assert ledger.faulted == [page(2) // PAGE]


def test_past_64_kernel_strays_a_call_each_is_counted_and_none_kept_nor_the_faults_room_taken() -> None:
    ledger = with_blocks((1, 1))
    for n in range(STRAYS_PER_CALL + 10):
        assert ledger.answer(WRITE, (5, page(10 + n), 1, 0, 0, 0)) == CONTINUE
    assert ledger.strays == STRAYS_PER_CALL + 10 and len(ledger.faulted) == STRAYS_PER_CALL
    assert ledger.call_strays == 0  # a fault of the driver's in this call still has its room: the driver counts alike
    assert ledger.answer(MPROTECT, (page(500), PAGE, PROT_READ, 0, 0, 0)) == CONTINUE
    assert ledger.strays == STRAYS_PER_CALL + 11


def test_a_range_outside_the_span_is_none_of_the_fences() -> None:
    ledger = with_blocks((1, 1))
    assert ledger.answer(WRITE, (5, 0x7F0000000000, 1 << 20, 0, 0, 0)) == CONTINUE
    assert ledger.answer(WRITE, (5, SPAN_END, 8, 0, 0, 0)) == CONTINUE
    assert ledger.strays == 0
