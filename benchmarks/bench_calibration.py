"""Benchmark: the speed calibration of the O(n²) notes against the one their constants were fitted with.

:func:`isotropy._kernels.cost.measured_speed` times 512 x 256 x 512 float32 products on one BLAS thread (times
the cores) and square-root passes, the median rate of five windows of 15 and 8 ms. The constants of ``isotropy/_kernels/cost.py``
were fitted with an earlier calibration: the median of 7 single products on all BLAS threads, each followed by
one square-root pass (reproduced here as ``fitted_with``). On a shared machine that one read 3x to 30x slow
from one process to the next (a product shorter than the scheduler's time slice runs alone or waits a whole
slice). This prints both, interleaved, and the ratios ``fitted_with / measured_speed`` (medians) that
``cost._TO_FITTED_UNITS`` holds: run it on an idle machine. With ``--busy``, a second process keeps one core busy
and the spread of each calibration over the rounds shows which one follows the machine's share.

Usage::

    .venv/bin/python benchmarks/bench_calibration.py [--rounds 15] [--busy]
"""

from __future__ import annotations

import argparse
import multiprocessing
import time

import numpy as np

from isotropy._kernels.cost import calibration_operands, measured_speed


def fitted_with() -> tuple[float, float]:
    """The calibration the constants were fitted with (flop/s, elements/s)."""
    A, B, C = calibration_operands()
    products, elements = [], []
    for _ in range(7):
        start = time.perf_counter()
        np.matmul(A, B, out=C)
        products.append(2.0 * C.size * A.shape[1] / max(time.perf_counter() - start, 1e-9))
        start = time.perf_counter()
        np.sqrt(np.abs(C, out=C), out=C)
        elements.append(C.size / max(time.perf_counter() - start, 1e-9))
    return float(np.median(products)), float(np.median(elements))


def _spin(stop):
    while not stop.is_set():
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--busy", action="store_true", help="keep one core busy with a second process")
    args = parser.parse_args(argv)
    stop = multiprocessing.Event()
    spinner = multiprocessing.Process(target=_spin, args=(stop,)) if args.busy else None
    if spinner is not None:
        spinner.start()
    try:
        old, new = [], []
        for _ in range(args.rounds):
            old.append(fitted_with())
            new.append(measured_speed())
    finally:
        if spinner is not None:
            stop.set()
            spinner.join()
    old, new = np.array(old), np.array(new)
    print(f"{args.rounds} rounds, interleaved{', one core kept busy' if args.busy else ''}\n")
    print("| calibration | product flop/s: median | min / max | element-wise /s: median | min / max |")
    print("|---|---:|---:|---:|---:|")
    for name, values in (("fitted with (median of 7 single calls, all BLAS threads)", old),
                         ("measured_speed (median of 5 windows of 15 / 8 ms, one BLAS thread x cores)", new)):
        med = np.median(values, axis=0)
        spread = values.min(axis=0) / values.max(axis=0)
        print(f"| {name} | {med[0]:.3g} | {spread[0]:.2f} | {med[1]:.3g} | {spread[1]:.2f} |")
    ratio = np.median(old, axis=0) / np.median(new, axis=0)
    print(f"\nfitted with / measured_speed (cost._TO_FITTED_UNITS): ({ratio[0]:.2f}, {ratio[1]:.2f})")


if __name__ == "__main__":
    main()
