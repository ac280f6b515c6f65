"""Benchmark: PoolFile's window and read, as each llm_init and each observation of a pool uses them.

    python tests/bench/pool_file_window.py [--windows N]

Places N windows of a hypothesis-sized pool (300 blocks + 63 bytes: guard + pool + guard, its magic numbers)
one after another, restarting every 100 (a new adapter), and reads each back whole; then places one 2 GiB
window of zeros (big_pool's, never written: the file stays sparse). Prints the wall-clock microseconds per
window, per read, and the 2 GiB window's milliseconds. Prints figures; asserts nothing.
"""

import argparse
import time

from oracle.hw3.pool import GUARD, initial_pool
from oracle.hw3.pool_file import PoolFile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--windows", type=int, default=20000)
    windows = parser.parse_args().windows
    size = 300 * 64 + 63
    image = initial_pool(size)
    pools = PoolFile()
    try:
        placed = read = 0.0
        for i in range(windows):
            if i % 100 == 0:
                pools.restart()
            start = time.perf_counter()
            offset = pools.window(size, GUARD, image=image)
            middle = time.perf_counter()
            pools.read(offset, size + 2 * len(GUARD))
            placed, read = placed + middle - start, read + time.perf_counter() - middle
        pools.restart()
        start = time.perf_counter()
        pools.window(2 << 30, GUARD)
        big = time.perf_counter() - start
    finally:
        pools.close()
    print(f"{windows} windows of {size} bytes: {placed / windows * 1e6:.1f} us per window, "
          f"{read / windows * 1e6:.1f} us per read; a 2 GiB window of zeros: {big * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
