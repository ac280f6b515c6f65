"""The ledger's judgement of the kernel's own access to the heap (oracle/native/ledger.py kernel_access,
oracle/native/kernel_access.py), on plain values: a system call the driver's filter hands over because an argument
lies in the fence's span. No process: which range is a stray, what is counted, and that the call always goes on."""

from oracle.native.kernel_access import ranges
from oracle.native.ledger import (
    CONTINUE, MAP_ANONYMOUS, MAP_FIXED_NOREPLACE, MAP_PRIVATE, MAP_SHARED, MMAP, MPROTECT, PAGE, PROT_READ, PROT_WRITE,
    SPAN_END, SPAN_START, STRAYS_PER_CALL, Ledger,
)

RW = PROT_READ | PROT_WRITE
READ, WRITE, FSTAT, GETRANDOM, CLOSE, IOCTL, FCNTL, RT_SIGRETURN, OPENAT, PRCTL = 0, 1, 5, 318, 3, 16, 72, 15, 257, 157
ARCH_PRCTL = 158
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


def test_a_known_calls_other_arguments_are_no_addresses() -> None:
    ledger = with_blocks((1, 1))
    assert ledger.answer(WRITE, (page(7), page(1), 4, 0, 0, 0)) == CONTINUE  # a descriptor of that value
    assert ledger.answer(WRITE, (5, page(1), 0, page(9), 0, 0)) == CONTINUE
    assert ledger.answer(READ, (5, page(2), 0, 0, 0, 0)) == CONTINUE  # nothing read: no byte touched
    assert ledger.strays == 0


def test_only_a_calls_own_pointer_parameters_name_memory_not_the_registers_it_does_not_take() -> None:
    ledger = with_blocks((1, 1))
    assert ledger.answer(RT_SIGRETURN, (page(2), page(3), 0, 0, 0, 0)) == CONTINUE  # left over from the handler
    assert ledger.answer(CLOSE, (page(5), 0, 0, 0, 0, 0)) == CONTINUE  # a descriptor of that value: no pointer
    assert ledger.answer(WRITE, (5, page(1), 4, page(6), page(7), 0)) == CONTINUE  # write takes three
    assert ledger.answer(FCNTL, (5, 1, page(8), 0, 0, 0)) == CONTINUE  # F_GETFD: its variadic argument unused
    assert ledger.strays == 0
    assert ledger.answer(OPENAT, (AT_FDCWD, page(2) + 16, 0, 0, 0, 0)) == CONTINUE  # a path on the guard page
    assert ledger.answer(FCNTL, (5, 5, page(4), 0, 0, 0)) == CONTINUE  # F_GETLK: a struct flock
    assert ledger.faulted == [page(2) // PAGE, page(4) // PAGE]


def test_an_ioctl_names_its_argument_by_the_size_its_number_encodes() -> None:
    assert ranges(IOCTL, (5, 0x80085401, 77, 0, 0, 0)) == [(77, 8)]  # _IOR('T', 1, 8 bytes)
    assert ranges(IOCTL, (5, 0x5401, 77, 0, 0, 0)) == []  # TCGETS, a legacy number: no size, not judged
    assert ranges(PRCTL, (15, 77, 0, 0, 0, 0)) == [(77, 16)]  # PR_SET_NAME reads 16 bytes
    assert ranges(PRCTL, (38, 77, 0, 0, 0, 0)) == []  # PR_SET_NO_NEW_PRIVS: a number
    assert ranges(ARCH_PRCTL, (0x1003, 77, 0, 0, 0, 0)) == [(77, 8)]  # ARCH_GET_FS writes 8 bytes
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
