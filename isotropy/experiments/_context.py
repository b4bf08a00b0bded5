"""The run context handed to every experiment: device, threads, data directory, resume, logging, progress.

An experiment never reads flags or environment variables itself; it asks its context:

- ``ctx.device``: the torch device string, from ``--device auto|cpu|cuda[:N]`` (``auto``: CUDA when
  torch sees one, else CPU; the same rule for every experiment);
- ``ctx.threads``: CPU threads for torch and the BLAS/OpenMP pools while the run lasts (restored after);
- ``ctx.data_dir``: where data sets live (``--data-dir``, else ``$ISOTROPY_DATA``, else ``./data``);
- ``ctx.resume``: keep finished parts; ``ctx.read_part`` / ``ctx.write_part`` store one finished part
  (a seed, a run of a sweep) with its seed, the config hash and a completeness mark, and refuse a
  part file that is foreign, duplicated or incomplete;
- ``ctx.log`` and ``ctx.progress``: messages on stderr and tqdm bars, both silent with ``--quiet``;
- ``ctx.setup``: the name of the setup (a packaged name, or a YAML file's stem), for labels;
- ``ctx.prepared``: what the experiment's ``prepare`` loaded (model, data) before the results
  directory was touched.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isotropy.datasets._paths import data_dir as resolve_data_dir
from isotropy.experiments._files import read_json

__all__ = ["RunContext", "max_threads", "quiet_progress", "resolve_device", "thread_limits"]


def max_threads() -> int:
    """The most CPU threads ``--threads`` takes: 4 per logical CPU of this machine, and at least 64.

    More threads than logical CPUs only oversubscribe them; a few times that still lets a user keep the
    count of a bigger machine (64 covers a copied ``--threads 32`` or ``64`` on a laptop). Past it the libraries
    fail in ways that name neither the flag nor the value: ``--threads 99999`` could not create its
    threads inside an import, which was reported as a missing package.
    """
    import os

    return max(64, 4 * (os.cpu_count() or 1))


def _stderr_is_a_terminal() -> bool:  # also the runner's: the libraries' bars follow the run's
    """Whether stderr, where the bars go, is a terminal (not a file, a pipe or a test's capture)."""
    import sys

    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def resolve_device(device: str | None) -> str:
    """``--device``: the library's one device rule (:func:`isotropy._utils.device.resolve_device`)."""
    from isotropy._utils.device import resolve_device as resolve

    return resolve(device, name="--device")


# What a BLAS or OpenMP library reads when it is loaded: the pools that a run loads inside ``thread_limits`` (scipy's
# own OpenBLAS, scikit-learn's libgomp, loaded by ``prepare`` or ``run``) start with these counts.
_POOL_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


@contextlib.contextmanager
def thread_limits(threads: int | None):
    """Limit torch's intra-op threads and the BLAS/OpenMP pools to ``threads`` inside the block; restore after.

    ``threadpool_limits`` reaches only the libraries loaded when the block starts: a library that the run loads
    later (scipy's own OpenBLAS and scikit-learn's libgomp, imported by ``prepare`` or ``run``) kept its default of
    one thread per CPU under ``--threads 1``, while ``run.json`` said 1. The pool variables, read by a library when
    it loads, are set for the block too; a pool loaded inside it is set back to the count it would have had without
    the block when the block ends.
    """
    if threads is None:
        yield
        return
    import os
    import sys

    from threadpoolctl import ThreadpoolController, threadpool_limits

    torch = sys.modules.get("torch")
    if torch is None:
        import torch
    previous = torch.get_num_threads()
    saved = {name: os.environ.get(name) for name in _POOL_VARIABLES}
    before = {lib.filepath for lib in ThreadpoolController().lib_controllers}
    torch.set_num_threads(int(threads))
    os.environ.update({name: str(int(threads)) for name in _POOL_VARIABLES})
    try:
        with threadpool_limits(limits=int(threads)):
            yield
    finally:
        torch.set_num_threads(previous)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for lib in ThreadpoolController().lib_controllers:
            if lib.filepath not in before:  # loaded inside the block: its count as it would have loaded outside it
                lib.set_num_threads(_default_threads(lib.internal_api, saved))


# The variables each pool reads when it loads, first found first (threadpoolctl's internal_api names the library):
# OpenBLAS does not read MKL's, nor MKL OpenBLAS's; any other BLAS is read as OpenBLAS
_READS = {"openmp": ("OMP_NUM_THREADS",), "openblas": ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"),
          "mkl": ("MKL_NUM_THREADS", "OMP_NUM_THREADS"), "blis": ("BLIS_NUM_THREADS", "OMP_NUM_THREADS")}


def _default_threads(internal_api: str, variables: dict) -> int:
    """The thread count a pool of ``internal_api`` (threadpoolctl's: "openblas", "mkl", "blis", "openmp", ...) starts
    with under the environment ``variables``: the first of the variables it reads that is set, else one thread per CPU
    (MKL starts from the physical cores, which the standard library does not tell)."""
    import os

    for name in _READS.get(internal_api, _READS["openblas"]):
        value = (variables.get(name) or "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def threads_in_effect() -> dict:
    """:func:`isotropy._utils.threads.threads_in_effect` with torch loaded (every experiment computes with it)."""
    import torch  # noqa: F401 - its thread count is part of the record

    from isotropy._utils.threads import threads_in_effect as counts

    return counts()


@contextlib.contextmanager
def quiet_progress(quiet: bool):
    """With ``quiet``, no library draws a progress bar inside the block; each one's setting is restored after.

    The experiments' own bars are off through ``ctx.progress`` / ``ctx.show_progress``; this also silences the
    bars that transformers draws by itself ("Loading weights", through its ``utils.logging`` switch) and the
    Hugging Face hub's download bars. transformers is imported only when it is installed.
    """
    if not quiet:
        yield
        return
    import importlib.util

    hub_was_disabled = None
    if importlib.util.find_spec("huggingface_hub") is not None:
        from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

        hub_was_disabled = are_progress_bars_disabled()
    with contextlib.ExitStack() as stack:
        if importlib.util.find_spec("transformers") is not None:
            # entered (transformers imported) before the hub's switch moves: on import, transformers copies the
            # hub's switch into its own
            from isotropy.models._quiet import quiet_transformers

            stack.enter_context(quiet_transformers())
        if hub_was_disabled is False:
            disable_progress_bars()
            stack.callback(enable_progress_bars)  # undone before transformers' switch (last in, first out)
        try:
            yield
        finally:
            stack.close()
            if hub_was_disabled:  # transformers' switch turns the hub's bars back on with its own
                disable_progress_bars()


def _echo(message: str) -> None:
    import click

    click.echo(message, err=True)


class _TenthLines:
    """:meth:`RunContext.progress` in a log file: ``"<desc>: 30% (3/10 seeds)"`` on stderr at each tenth of ``total``
    (or of ``len(iterable)``), one line each, through the ``tqdm`` methods the experiments call (``update``,
    ``set_postfix``, ``set_postfix_str``, ``write``, ``close``, iteration, ``with``). Without a total, a line per
    hundred units."""

    def __init__(self, iterable=None, *, total=None, desc=None, unit="it", **_):
        self.iterable, self.desc, self.unit = iterable, desc, unit
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.total, self.n, self._said, self._postfix = total, 0, 0, ""

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)

    def update(self, n=1) -> None:
        self.n += n
        step = self.n * 10 // self.total if self.total else self.n // 100
        if step > self._said:
            self._said = step
            done = f"{100 * self.n // self.total}% ({self.n}/{self.total} {self.unit})" if self.total else \
                f"{self.n} {self.unit}"
            _echo(f"{self.desc}: {done}{self._postfix}" if self.desc else f"{done}{self._postfix}")

    def set_postfix(self, ordered_dict=None, refresh=True, **kwargs) -> None:
        items = {**(ordered_dict or {}), **kwargs}
        self._postfix = (", " + ", ".join(f"{k}={v}" for k, v in items.items())) if items else ""

    def set_postfix_str(self, s="", refresh=True) -> None:
        self._postfix = f", {s}" if s else ""

    def write(self, message, file=None, end="\n") -> None:
        _echo(str(message))

    def close(self) -> None:
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class RunContext:
    """Everything about a run that is not the science (see the module docstring)."""

    experiment: str
    results_dir: Path
    setup: str | None = None
    device: str = "cpu"
    threads: int | None = None
    resume: bool = False
    data_dir: Path = field(default_factory=resolve_data_dir)
    quiet: bool = False
    config_hash: str = ""
    prepared: Any = None
    _on_first_result: Any = None  # the runner's hook: a part was written (old results may now go)
    _meta_update: Any = None  # the runner's hook: extra facts for run.json

    @property
    def show_progress(self) -> bool:
        """Bars of the libraries a run calls: on a terminal and without ``--quiet`` (a log file gets no bars)."""
        return not self.quiet and _stderr_is_a_terminal()

    def log(self, message: str) -> None:
        """A progress message on stderr (nothing with ``--quiet``)."""
        if not self.quiet:
            _echo(message)

    def progress(self, **kwargs):
        """A tqdm bar on a terminal (as ``isotropy measure`` draws its own), never with ``--quiet``; keyword arguments
        as for ``tqdm``. Redirected to a file, stderr gets a line at each tenth of the work instead
        (:class:`_TenthLines`, as ``isotropy measure --progress`` writes in a log file), without the bars'
        carriage-return updates: a run in a log file printed nothing for minutes and looked hung (a trial)."""
        from tqdm.auto import tqdm

        if not self.quiet and not _stderr_is_a_terminal():
            return _TenthLines(**kwargs)
        return tqdm(disable=self.quiet, **kwargs)

    def record(self, **facts) -> None:
        """Add facts (data sizes, sources) to ``run.json``."""
        if self._meta_update is not None:
            self._meta_update(facts)

    def result_written(self) -> None:
        """Tell the runner the run has written a result (the previous run's files are then deleted)."""
        if self._on_first_result is not None:
            self._on_first_result()

    # -------------------------------------------------------- finished parts (seeds, runs of a sweep)
    def write_part(self, relpath: str | Path, record: dict, *, seed: int) -> Path:
        """Write one finished part atomically, marked with its seed, the config hash and ``complete``."""
        from isotropy.experiments._results import write_json

        self.result_written()
        return write_json(self.results_dir / relpath,
                          {**record, "seed": int(seed), "config_hash": self.config_hash, "complete": True})

    def read_part(self, relpath: str | Path, *, seed: int, keys=()) -> dict | None:
        """A finished part to keep on ``--resume`` (None when absent or not resuming); refuses a bad part file.

        ``keys`` are the entries the experiment reads back from the part (its numbers): a part that is
        marked complete but lacks one is refused in one line, as is a file that is not JSON (random or
        cut short). Refused rather than re-run: a marked file without its numbers was not written by
        ``write_part`` as it stands (damaged, or edited), so which parts can be trusted is the user's
        call; deleting the file runs that part again.
        """
        path = self.results_dir / relpath
        if not self.resume or not path.is_file():
            return None
        try:  # bounded work: a file cut short, not UTF-8 or nested without end is one line
            record = read_json(path, what="part file", expected="the JSON written by a finished part")
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "problem", None) or " ".join(str(exc).split())[:200] or type(exc).__name__
            raise ValueError(f"--resume: {str(path)!r} is not a readable part file ({reason}); expected the JSON "
                             f"written by a finished part; delete it to run that part again.") from None
        problem = None
        if not isinstance(record, dict) or not record.get("complete"):
            problem = "is incomplete (no 'complete' mark)"
        elif record.get("seed") != seed:
            problem = f"holds seed {record.get('seed')!r}, not {seed} (a copied or foreign file)"
        elif record.get("config_hash") != self.config_hash:
            problem = (f"was written under another config (hash {record.get('config_hash')!r}, this run's "
                       f"{self.config_hash!r})")
        elif missing := [key for key in keys if key not in record]:
            problem = (f"is marked complete but lacks {missing}: expected a finished part holding "
                       f"{sorted(keys)}")
        if problem:
            raise ValueError(f"--resume: {str(path)!r} {problem}; delete it to run that part again.")
        return record
