"""``uniformity`` and ``alignment`` on torch tensors, forward and backward, against the paper's own formulas, in one run.

The peer is the reference code of Wang & Isola (2020), on rows normalised with ``F.normalize``:
``torch.pdist(x, p=2).pow(2).mul(-t).exp().mean().log()`` for uniformity and
``(x - y).norm(p=2, dim=1).pow(alpha).mean()`` for alignment, in the input's dtype (float32, as in
training) and in float64 (the precision ours computes in). Ours (``isotropy.uniformity``,
``isotropy.alignment``, ``normalize=True``) computes in float64 with chords from the rows at exact scale and an
``expm1``/``log1p`` log-mean-exp, so that nearly collapsed rows keep their relative precision (where the
float32 peer loses every digit). Each case is timed as a forward and a backward pass from a float32
leaf tensor, fastest of ``--repeat``, the contenders interleaved; the ratios are ours over each peer,
measured in the same run. Values: ours (returned in the input's dtype, float32) against the float64 peer on the same
rows, as a relative difference (float32 rounds a value by up to 6e-8 of it).

``--compare DIR`` times the same two functions of another checkout too (``git worktree add DIR COMMIT``), interleaved
with this one's: its ``isotropy/metrics/contrastive.py`` and ``isotropy/_kernels/sphere.py`` loaded under other names
(the rest, input checks included, is this checkout's), a column of its milliseconds and one of ours over it per
checkout.

    nice -n 5 .venv/bin/python benchmarks/bench_contrastive.py [--sizes 256,1024,4096] [--d 384] [--device cpu]
        [--compare DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from pathlib import Path


def _peers(torch):
    """The reference formulas, in the dtype of their input."""
    import torch.nn.functional as F

    def uniformity(x, t=2.0):
        return torch.pdist(F.normalize(x, dim=1), p=2).pow(2).mul(-t).exp().mean().log()

    def alignment(x, y, alpha=2.0):
        return (F.normalize(x, dim=1) - F.normalize(y, dim=1)).norm(p=2, dim=1).pow(alpha).mean()

    return uniformity, alignment


def _timed(fn, leaves):
    """Seconds of ``fn(*leaves)`` and its backward, and the value (the device's queue drained at both ends: on a GPU
    the clock would otherwise time the kernels' launches only)."""
    import torch

    device = leaves[0].device
    # torch.accelerator from torch 2.6; before it, the device's own module (torch.cuda, torch.mps, ...)
    synchronize = (lambda: None) if device.type == "cpu" else (
        (lambda: torch.accelerator.synchronize(device)) if hasattr(torch, "accelerator")
        else getattr(torch, device.type).synchronize)
    for leaf in leaves:
        leaf.grad = None
    synchronize()
    start = time.perf_counter()
    value = fn(*leaves)
    value.backward()
    synchronize()
    return time.perf_counter() - start, float(value.detach())


def _commit(tree) -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True,
                          check=True).stdout.strip()


def _module(name, text):
    module = types.ModuleType(name)
    exec(compile(text, name, "exec"), module.__dict__)  # noqa: S102 - our own history
    sys.modules[name] = module
    return module


def _functions_of(tree):
    """``(commit, uniformity, alignment)`` of the checkout ``tree``: its contrastive metrics and their sphere kernels
    loaded under other names."""
    commit, package = _commit(tree), Path(tree) / "isotropy"
    sphere = _module(f"_sphere_{commit}", (package / "_kernels" / "sphere.py").read_text())
    text = (package / "metrics" / "contrastive.py").read_text().replace(
        "from isotropy._kernels.sphere import", f"from {sphere.__name__} import")
    metrics = _module(f"_contrastive_{commit}", text)
    return commit, metrics.uniformity, metrics.alignment


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="256,1024,4096", help="rows per batch, comma-separated")
    parser.add_argument("--d", type=int, default=384, help="features")
    parser.add_argument("--repeat", type=int, default=5, help="timings per contender (the fastest is kept)")
    parser.add_argument("--device", default="cpu", help="torch device of the tensors (cpu, cuda, ...)")
    parser.add_argument("--compare", metavar="DIR", action="append", default=[],
                        help="another checkout whose two functions are timed too (repeatable)")
    args = parser.parse_args(argv)

    import torch

    from isotropy import alignment, uniformity

    peer_uniformity, peer_alignment = _peers(torch)
    others = [_functions_of(tree) for tree in args.compare]
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"forward + backward from float32 leaves, d = {args.d}, device {args.device}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; fastest of {args.repeat}, interleaved; ratios: ours / peer"
          f"{''.join(f'; {commit}: {tree}' for (commit, _, _), tree in zip(others, args.compare))}", flush=True)
    extra = "".join(f" {commit} (ms) | ours / {commit} |" for commit, _, _ in others)
    print("| metric | n | ours (ms) | peer float32 (ms) | peer float64 (ms) | ours / peer float32 | ours / peer float64 "
          f"|{extra} abs(ours - peer float64) / abs(peer float64) |", flush=True)
    print("|---|---|---|---|---|---|---|" + "---|---|" * len(others) + "---|", flush=True)
    generator = torch.Generator().manual_seed(0)
    for n in sizes:
        X = torch.randn(n, args.d, generator=generator).to(args.device)
        Y = X + 0.3 * torch.randn(n, args.d, generator=generator).to(args.device)  # positives: perturbed rows
        cases = {
            "uniformity": ((X,), {"ours": uniformity, "peer float32": peer_uniformity,
                                  "peer float64": lambda x: peer_uniformity(x.double()),
                                  **{commit: fn for commit, fn, _ in others}}),
            "alignment": ((X, Y), {"ours": alignment, "peer float32": peer_alignment,
                                   "peer float64": lambda x, y: peer_alignment(x.double(), y.double()),
                                   **{commit: fn for commit, _, fn in others}}),
        }
        for metric, (data, contenders) in cases.items():
            leaves = [A.clone().requires_grad_(True) for A in data]
            seconds = {name: [] for name in contenders}
            values = {}
            for fn in contenders.values():  # warm-up: allocations, first-call dispatch
                _timed(fn, leaves)
            for _ in range(args.repeat):
                for name, fn in contenders.items():
                    spent, values[name] = _timed(fn, leaves)
                    seconds[name].append(spent)
            best = {name: min(times) for name, times in seconds.items()}
            print(f"| {metric} | {n:,} | {1e3 * best['ours']:.2f} | {1e3 * best['peer float32']:.2f} | "
                  f"{1e3 * best['peer float64']:.2f} | {best['ours'] / best['peer float32']:.2f} | "
                  f"{best['ours'] / best['peer float64']:.2f} |"
                  + "".join(f" {1e3 * best[commit]:.2f} | {best['ours'] / best[commit]:.2f} |" for commit, _, _ in others)
                  + f" {abs(values['ours'] / values['peer float64'] - 1):.1e} |", flush=True)


if __name__ == "__main__":
    main()
