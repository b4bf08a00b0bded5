"""The one experiment contract: an :class:`Experiment` record, :func:`execute`, and how results are laid out.

Every ``isotropy run NAME`` command is built by :func:`isotropy.experiments._command.make_command`
from an :class:`Experiment`; each experiment keeps only its science. The same flags everywhere::

    --setup NAME|FILE.yaml   --set KEY=VALUE (repeatable, dotted)   --print-config
    --seeds 0,1,2   --device auto|cpu|cuda[:N]|mps   --threads N   --resume   --overwrite
    --results-dir DIR   --data-dir DIR   --no-plot   --quiet

and the same results directory::

    run.json        experiment, resolved config and its hash, seeds, device, threads (asked for and in
                    effect), data dir, command, pid/host, package versions, status (running -> finished |
                    failed | interrupted), start and end times, the results directory; after --resume, the
                    earlier parts' command, times, device, threads and versions (earlier_runs)
    config.yaml     the resolved config, headed by ``experiment: NAME`` (re-run it with --setup DIR/config.yaml)
    ...             the experiment's tables and numbers
    claims.json     the paper's claims decided on these numbers (written by ``report``, when defined)
    figures/        every figure, PNG and SVG (``isotropy plot DIR --format png,svg,pdf --dpi N``)

What :func:`execute` guarantees, in order: the config is validated (by the command) and the
model and data are loaded (``prepare``) *before* the results directory is touched; a lock keeps a
second run out of the directory; a fresh run into a directory holding a run of other settings is refused
unless ``--overwrite``; a fresh run moves the previous run's files aside and deletes them only once it has
written its first result (restored if it fails before that); ``run.json``
says ``running`` from the start and ``finished``, ``failed`` (with the error) or ``interrupted``
(Ctrl-C) at the end, and ``finished`` only once ``report`` has written ``claims.json``; torch/BLAS
threads are restored afterwards; ``run`` never plots, figures come from ``plot`` (drawn after
``finished``, still under the lock). Every file the run writes under the lock (through
:func:`~isotropy._utils.atomic.atomic_write`) is listed as the run's and goes with it when a fresh run
starts; what another process writes there meanwhile is not, and stays.

Writing another experiment
--------------------------
Copy ``isotropy/experiments/_template/`` (a complete, tested experiment) to
``isotropy/experiments/<name>/``, put its default setup in ``isotropy/configs/<name>/``, and add one
line to ``EXPERIMENTS`` in :mod:`isotropy.experiments._registry`. Its layout::

    config.py       class Config(ExperimentConfig): ...   # the one place of the schema
    run.py          def prepare(config, ctx): ...        # load model and data; write nothing
                    def run(config, results_dir, ctx):   # compute and write numbers; never plot
                        data = ctx.prepared              # always set by the runner
    plot.py         def plot_results(results_dir): ...   # matplotlib Figures keyed by their path
    experiment.py   EXPERIMENT = Experiment(name="my-experiment", package=__package__,
                                            config_model=Config, default_setup="default")

The record binds ``prepare``, ``run``, ``plot_results`` and ``report`` by module name (no
wrappers); the runner calls ``report`` as the run's last step and the command prints what it
returned (by default ``report_file``, ``results.md``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import socket
import traceback
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isotropy._utils.atomic import atomic_write
from isotropy._utils.warn import SpanBoundWarning
from isotropy.experiments._config import (
    CONFIG_ROOT,
    EXPERIMENT_KEY,
    ConfigError,
    _shown,
    bool_words,
    config_hash,
    dotted_keys,
    dump_config,
    load_yaml,
    merge,
    own_values,
    parse_set_options,
    parse_yaml_value,
    resolve_config,
    setup_path,
    validate,
)
from isotropy.experiments._context import (
    RunContext,
    _echo,
    _stderr_is_a_terminal,
    max_threads,
    quiet_progress,
    resolve_device,
    thread_limits,
    threads_in_effect,
)
from isotropy.experiments._results_dir import RUN_NAMES, Replacement, ResultsLock, check_results_dir, toolkit_entries

__all__ = ["Experiment", "RunOutcome", "execute", "save_figures"]


@dataclass(frozen=True)
class Experiment:
    """One reproducible experiment, bound to its package by module name.

    The record names the experiment's package; the science is found there by convention and
    imported only when it is called (``isotropy --help`` loads no torch):

    - ``<package>.run``: ``prepare(config, ctx)`` (optional), ``run(config, results_dir, ctx)``
      and, optionally, ``report(results, results_dir) -> str``;
    - ``<package>.plot``: ``plot_results(results_dir) -> dict[str, Figure]``;
    - ``<package>.config``: the config model and, optionally, ``settle(config, given) -> config``, called on
      the validated config with the top-level keys the user gave (``--set``, the shortcut flags, a YAML
      file's keys): defaults that follow what was given, and refusals between keys, before any data is read.

    Attributes
    ----------
    name : str
        The command name (``isotropy run NAME``) and the folder of its packaged setups.
    package : str
        The experiment's package (``"isotropy.experiments.istar"``; ``__package__`` in its
        ``experiment.py``).
    config_model : pydantic model class
        The config schema (a subclass of ``ExperimentConfig``, in ``<package>.config``); must have
        a ``seeds`` field.
    default_setup : str
        The packaged setup whose values are the defaults under a user's partial YAML.
    resume_keys : set of str
        Config keys that may differ on ``--resume`` (e.g. ``seeds``: add seeds to a finished run).
        ``--resume`` of a run that finished with exactly this config (and whose ``claims.json`` is
        current) runs nothing, in every experiment; anything else re-enters ``run``, which keeps
        the finished parts it reads back with ``ctx.read_part`` (an experiment without parts
        computes everything again).
    max_seeds : int, optional
        How many seeds one run takes (1 for experiments that are deterministic given one seed).
    shortcuts : tuple of (flag, key, help)
        Convenience flags: ``("--lr", "lr", ...)`` makes ``--lr X`` mean ``--set lr=X`` (a text
        field takes the text verbatim, as ``--set`` does); a key ending in ``[]`` takes a
        comma-separated list.
    report_file : str
        The table the command prints when the run has finished (read back once, by the runner),
        unless ``<package>.run`` defines ``report``.
    help : str
        The command's help text.
    """

    name: str
    package: str
    config_model: type
    default_setup: str = "default"
    resume_keys: frozenset = frozenset({"seeds"})
    max_seeds: int | None = None
    shortcuts: tuple = ()
    report_file: str = "results.md"
    help: str = ""

    def _science(self, module: str, attr: str):
        import importlib

        return getattr(importlib.import_module(f"{self.package}.{module}"), attr, None)

    def prepare(self, config, ctx) -> Any:
        """``<package>.run.prepare(config, ctx)``: load the model and data, write nothing (None when undefined)."""
        function = self._science("run", "prepare")
        return None if function is None else function(config, ctx)

    def run(self, config, results_dir, ctx) -> dict:
        """``<package>.run.run(config, results_dir, ctx)``: compute and write the results; never plot."""
        return self._science("run", "run")(config, results_dir, ctx)

    def plot(self, results_dir) -> dict:
        """``<package>.plot.plot_results(results_dir)``: Figures keyed by their path under ``results_dir``.

        Drawn in the house style (:mod:`isotropy.experiments._style`): the same text sizes for every
        experiment, no text under 8 pt, tick labels thinned where they would run together.
        """
        from isotropy.experiments._style import declutter, house_style

        with house_style():
            figures = self._science("plot", "plot_results")(results_dir)
            for fig in figures.values():
                declutter(fig)
        return figures

    def missing(self, config, results_dir) -> list[str]:
        """``<package>.run.missing(config, results_dir)``: the files of a finished run that are not there (optional:
        ``[]`` when undefined); ``--resume`` runs again to rewrite them instead of running nothing."""
        function = self._science("run", "missing")
        return [] if function is None else list(function(config, results_dir))

    def report(self, results: dict, results_dir) -> str:
        """What the command prints when the run has finished: ``<package>.run.report`` or ``report_file``."""
        function = self._science("run", "report")
        if function is not None:
            return function(results, results_dir)
        path = Path(results_dir) / self.report_file
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def config(self, setup: str | None = None, *, sets: Iterable[str] = (), **overrides):
        """The validated config of ``setup`` (default: the default setup) with ``overrides`` and ``--set`` strings."""
        nested: dict = {}
        for key, value in overrides.items():  # dotted keyword names reach nested keys: **{"istar.zeta": 0.5}
            node = nested
            parts = key.split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        nested = merge(nested, _set_layer(self.config_model, sets, experiment=self.name))
        config = resolve_config(self.config_model, experiment=self.name, setup=setup,
                                default_setup=self.default_setup, overrides=nested, others=_config_models,
                                words=bool_words(sets))
        settle = self._science("config", "settle")  # optional: defaults that follow what the user gave
        unused = self._science("config", "unused")  # optional: the keys this config does not read
        file = load_yaml(setup_path(self.name, setup), name="config file") \
            if setup is not None and str(setup).endswith((".yaml", ".yml")) else None  # a user's (partial) YAML file
        saved = file is not None and EXPERIMENT_KEY in file  # a config.yaml a run saved (or --print-config printed)
        if settle is not None or unused is not None:
            given = set(nested) | set(file or ())
            if settle is not None:
                config = settle(config, frozenset(given))
            if unused is not None:
                # A key the run does not read was accepted, recorded and had no effect (minibatch-stability's
                # `--set embeddings.model=x` under sources [synthetic]): one the user gave is refused. A saved
                # config.yaml holds every key, read or not, and is run again as it is.
                self._refuse_unused(unused(config), given if not saved else set(nested), nested)
        self.check_seeds(config)
        # a saved config.yaml holds every key, the defaults it ran with too: only what is set over it was chosen
        config.set_given(dotted_keys(nested) | (dotted_keys(file) if file and not saved else set()))
        return config

    def _refuse_unused(self, unused: dict, given: set, nested: dict) -> None:
        for key, why in unused.items():
            if key in given:
                value = nested.get(key)
                shown = key
                while isinstance(value, dict) and len(value) == 1:  # the dotted key given: embeddings.model
                    (part, value), = value.items()
                    shown += f".{part}"
                raise ConfigError(f"The '{shown}' setting of {self.name} {why}."
                                  + (f" Got {_shown(value)} instead." if key in nested else ""))

    def check_seeds(self, config) -> None:
        seeds = list(config.seeds)
        if self.max_seeds is not None and len(seeds) > self.max_seeds:
            raise ConfigError(f"The 'seeds' setting of {self.name} must hold at most {self.max_seeds} seed(s) "
                              f"(one run is deterministic given its seed). Got {seeds!r} instead.")

    def default_results_dir(self, setup: str | None) -> Path:
        """``results/<experiment>/<setup>`` (a YAML file's stem for a user's setup; for the ``config.yaml`` a run
        wrote, its run's folder name: every such re-run went to ``results/<experiment>/config``, each replacing the
        last, a trial)."""
        if not (setup and str(setup).endswith((".yaml", ".yml"))):
            return Path("results") / self.name / (setup or self.default_setup)
        name = _setup_label(setup)
        folder = Path("results") / self.name / name
        if not _saved_run(setup):
            return folder
        # never the run itself (a fresh run there moves its results aside, then drops them): beside it
        return folder.with_name(f"{name}-rerun") if folder.resolve() == Path(setup).resolve().parent else folder


def _saved_run(setup) -> bool:
    """Whether ``setup`` is the ``config.yaml`` a run wrote (a ``run.json`` beside it)."""
    path = Path(setup)
    return path.name == "config.yaml" and (path.parent / "run.json").is_file()


def _setup_label(setup) -> str | None:
    """The setup's name in the run's table, claims and messages: a packaged setup's name, a YAML file's stem, and for
    the ``config.yaml`` a run wrote, its run's folder name (``demo``; ``RUN-previous`` for ``RUN/.previous/``): a
    re-run of ``results/classifier-geometry/demo/config.yaml`` was "config" in its table row, its claim ids and its
    claims' model, a trial."""
    if not (setup and str(setup).endswith((".yaml", ".yml"))):
        return setup
    if not _saved_run(setup):
        return Path(setup).stem
    from isotropy.experiments._results_dir import PREVIOUS_NAME

    run = Path(setup).resolve().parent
    # RUN/.previous/config.yaml: named for RUN ('.previous' is the runs' own folder name, and hidden)
    return f"{run.parent.name}-previous" if run.name == PREVIOUS_NAME else run.name


def _config_models() -> dict[str, type]:
    """``{name: config model}`` of every experiment, to name the one a foreign config file belongs to.

    Found by the layout every experiment has (``isotropy/configs/<name>/``, its record in
    ``isotropy.experiments.<name with _>.experiment``), imported by name only when a config file
    holds keys this experiment lacks: the runner names no experiment
    (``tests/test_experiment_config.py::test_the_runner_finds_every_experiments_config_model`` checks
    that this finds every experiment of ``isotropy run``). An experiment whose import fails in any way
    is left out: this only words a refusal, which then falls back to the key-by-key messages.
    """
    import importlib

    models = {}
    for folder in sorted(CONFIG_ROOT.iterdir()):
        if folder.is_dir() and not folder.name.startswith("_"):
            module = f"{__package__}.{folder.name.replace('-', '_')}.experiment"
            try:
                models[folder.name] = importlib.import_module(module).EXPERIMENT.config_model
            except Exception:  # noqa: BLE001, S112 - not an experiment, or one that fails to import: never named
                continue
    return models


def _field_annotation(model, path: list[str]):
    """The type annotation of the config key at ``path`` (dotted keys walk sub-models); None when unknown."""
    from pydantic import BaseModel

    node, annotation = model, None
    for part in path:
        info = node.model_fields.get(part) if isinstance(node, type) and issubclass(node, BaseModel) else None
        if info is None:
            return None
        annotation = info.annotation
        node = annotation
    return annotation


def _members(annotation) -> tuple:
    import types
    import typing

    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _accepts(members: tuple, value) -> bool:
    """Whether a non-text member of the field's type takes ``value`` as YAML parsed it (null, a number, a list)."""
    import typing

    for member in members:
        origin = typing.get_origin(member) or member
        if isinstance(value, bool):
            taken = member is bool
        elif isinstance(value, (int, float)):
            taken = member is float or (member is int and isinstance(value, int))
        else:
            taken = (value is None and member is type(None)) or (isinstance(value, list) and origin is list) \
                or (isinstance(value, dict) and origin is dict)
        if taken:
            return True
    return False


def _set_layer(model, pairs, *, experiment: str) -> dict:
    """``--set KEY=VALUE`` strings as one nested mapping; a text field takes its value verbatim.

    A field typed ``str`` (a model name, a path) keeps the text as it is: YAML would cut
    ``models/my model #2`` at the ``#`` and refuse ``a: b``. Where the field also takes another
    type (``str | None``, ``int | str``) a value that YAML reads as one of those (``null``, ``3``)
    keeps that meaning.
    """
    layer: dict = {}
    for pair in pairs:
        key, sep, text = str(pair).partition("=")
        path = key.strip().split(".")
        members = _members(_field_annotation(model, path)) if sep and all(path) else ()
        if str not in members:
            layer = merge(layer, parse_set_options([pair], experiment=experiment))
            continue
        try:
            value = parse_yaml_value(text, where=f"--set {key.strip()}")
        except ConfigError:
            value = text
        if isinstance(value, str) or not _accepts(members, value):
            value = text
        node = {path[-1]: value}
        for part in reversed(path[:-1]):
            node = {part: node}
        layer = merge(layer, node)
    return layer


@dataclass
class RunOutcome:
    """What :func:`execute` returns: the results, where they are, the report's text and the figures written."""

    results: dict
    results_dir: Path
    figures: list = field(default_factory=list)
    skipped: bool = False
    report: str = ""  # what ``experiment.report`` returned (the command prints it); "" when skipped


def save_figures(figures: dict, results_dir, *, formats=("png", "svg"), dpi: int = 150) -> list[Path]:
    """Save each figure of ``plot`` as ``results_dir/<key>.<format>`` (atomic writes); returns the paths."""
    from isotropy._utils.atomic import atomic_write

    results_dir = Path(results_dir)
    paths = []
    for key, fig in figures.items():
        for fmt in formats:
            path = results_dir / f"{key}.{fmt}"
            with atomic_write(path, "wb") as handle:
                fig.savefig(handle, format=fmt, dpi=dpi, bbox_inches="tight")
            paths.append(path)
    return paths


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class _Metadata:
    """``run.json`` and ``config.yaml``: written when the run starts, updated as it goes and when it ends."""

    def __init__(self, experiment: Experiment, config, ctx: RunContext):
        from isotropy._utils.versions import command_line, package_versions

        self.path = ctx.results_dir / "run.json"
        self.config = config.model_dump(mode="json")
        self.meta = {
            "experiment": experiment.name, "status": "running", "config": self.config,
            "config_hash": ctx.config_hash, "seeds": list(self.config.get("seeds") or []),
            "results_dir": str(ctx.results_dir.resolve()), "device": ctx.device, "threads": ctx.threads,
            "threads_in_effect": threads_in_effect(),
            "data_dir": str(ctx.data_dir), "resumed": ctx.resume,
            "command": command_line(), "pid": os.getpid(),
            "host": socket.gethostname(), "started": _now(), "ended": None,
            "platform": platform.platform(), "versions": package_versions(),
        }

    def write(self) -> None:
        from isotropy.experiments._results import write_json, write_text

        write_text(self.path.parent / "config.yaml", dump_config(self.config, experiment=self.meta["experiment"]))
        write_json(self.path, self.meta)

    def update(self, facts: dict) -> None:
        from isotropy.experiments._results import write_json

        self.meta.update(facts)
        write_json(self.path, self.meta)


def _previous_meta(results_dir: Path) -> dict | None:
    from isotropy.experiments._files import read_json

    path = results_dir / "run.json"
    if not path.is_file():
        return None
    try:  # bounded: 100k "[" or a file cut short is one line naming why
        meta = read_json(path, what="run record", expected="the run.json an 'isotropy run' writes")
    except (OSError, ValueError) as exc:
        raise ValueError(f"--resume: {str(path)!r} {getattr(exc, 'problem', 'cannot be read')}; it cannot be resumed. "
                         f"Drop --resume to start afresh.") from None
    return meta if isinstance(meta, dict) else None


_SAME_SETTINGS = ", which ran with the same settings"


def _changed_settings(old: dict | None, new: dict, shown: int = 4) -> str:
    """``", which ran with updates=50 where this one has 20"``: the top-level settings whose values differ between the
    replaced run's config and this one's (at most ``shown``, then how many more); empty when they are the same or the
    old config is not known. Seeds count: a run of other seeds replaces those results too."""
    if not old:
        return ""
    keys = [key for key in new if key in old and old[key] != new[key]] + [key for key in old if key not in new]
    if not keys:
        return _SAME_SETTINGS

    def value(config, key):
        text = json.dumps(config.get(key), ensure_ascii=False) if key in config else "(none)"
        return text if len(text) <= 40 else text[:37] + "..."

    listed = ", ".join(f"{key}={value(old, key)} where this one has {value(new, key)}" for key in keys[:shown])
    more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
    return f", which ran with {listed}{more}"


def _replaced_run(results_dir: Path) -> tuple[str | None, dict | None]:
    """The earlier run in ``results_dir`` in words (``"finished istar run"``) and its config (``None`` where unknown),
    or ``(None, None)`` where there is none: one read of its run.json."""
    try:
        meta = _previous_meta(results_dir)
    except ValueError:  # unreadable: still a run whose files go aside
        return "earlier run (its run.json unreadable)", None
    if meta is None:
        return None, None
    status, name, config = meta.get("status"), meta.get("experiment"), meta.get("config")
    status = status if isinstance(status, str) and status.isidentifier() else "earlier"
    words = f"{status} {name} run" if isinstance(name, str) and name.replace("-", "_").isidentifier() else \
        f"{status} run"
    return words, config if isinstance(config, dict) else None


def _check_resume(experiment: Experiment, results_dir: Path, values: dict, ignore) -> tuple[bool, str | None]:
    """On --resume: the previous run must be this experiment with the same config (up to ``resume_keys``).

    Returns whether it already finished with exactly this config (nothing to run), and what of it this run leaves out
    (:func:`_resume_leaves_out`).
    """
    meta = _previous_meta(results_dir)
    if meta is None:  # a new or mistyped --results-dir: said, not a silent fresh run
        return False, None
    if meta.get("experiment") != experiment.name:
        raise ValueError(f"Cannot resume in {str(results_dir)!r}: it holds a run of {meta.get('experiment')!r}, "
                         f"not {experiment.name}.")
    hashed = experiment.config_model.hashed_values  # a changed default as the hash saw it before: old runs resume
    old = meta.get("config") or {}
    old, values = (hashed(old) if isinstance(old, dict) else old), hashed(values)
    if config_hash(old, ignore=ignore) != config_hash(values, ignore=ignore):
        kept = {k: v for k, v in values.items() if k not in ignore}
        changed = _changed_settings({k: v for k, v in old.items() if k not in ignore}, kept).removeprefix(", which ")
        # what to do instead, as a fresh run's refusal says it (dropping --resume alone was then refused too, a trial)
        raise ValueError(f"Cannot resume in {str(results_dir)!r}: its run {changed or 'used other settings'}. Give "
                         f"another --results-dir to keep both, or drop --resume and give --overwrite to replace it.")
    return meta.get("status") == "finished" and old == values, _resume_leaves_out(results_dir, old, values, ignore)


def _resume_leaves_out(results_dir: Path, old, values: dict, ignore) -> str | None:
    """On --resume: the items of a list setting that may differ (``resume_keys``: seeds, lambdas, ...) that the run
    there (its config ``old``, as :func:`_check_resume` read it) has and this one leaves out, in words; ``None`` when
    none. Their parts stay in the folder, but this run's tables and figures are of its own list: a resume with fewer
    seeds rewrote a finished run's table for them without a word (a trial)."""
    if not isinstance(old, dict):
        return None
    out = []
    for key in sorted(ignore):
        before, now = old.get(key), values.get(key)
        if isinstance(before, list) and isinstance(now, list):
            gone = [item for item in before if item not in now]
            if gone:
                out.append(f"{key} {', '.join(json.dumps(item) for item in gone)}")
    if not out:
        return None
    return (f"{results_dir}: --resume leaves out {'; '.join(out)} of the run there: this run's tables and figures are "
            f"of the values given (their finished parts stay in the folder; give them again to include them)")


# What run.json keeps of each earlier part of a resumed run (earlier_runs): where, when, how and with which code.
_PART_FACTS = ("command", "host", "started", "ended", "status", "device", "threads", "threads_in_effect", "versions")


def _resume_conditions(previous: dict | None, meta: dict, results_dir: Path) -> dict:
    """On --resume: refuse to continue a run under another device or other thread counts, whose numbers differ in their
    last digits (a run on 2 threads resumed with --threads 1 finished with seed 0 of one and seeds 1-2 of the other,
    and run.json said 1 thread); returns the facts to record, with the earlier parts' own in ``earlier_runs`` (a
    resume after a change of code records each part's versions instead of only the last).
    """
    if not previous:
        return {}
    before, now = previous.get("threads_in_effect"), meta["threads_in_effect"]
    # the pools both saw (a library the experiment loads later brings its own pool, at the same limit)
    if isinstance(before, dict) and any(before[key] != now[key] for key in before.keys() & now.keys()):
        hint = f"--threads {previous['threads']}" if previous.get("threads") else "the thread settings it ran with"
        raise ValueError(f"Cannot resume in {str(results_dir)!r}: its run computed with threads {before} and this one "
                         f"would use {now}, which changes the last digits of the numbers. Resume with {hint}, or use "
                         f"another --results-dir.")
    if previous.get("device") not in (None, meta["device"]):
        raise ValueError(f"Cannot resume in {str(results_dir)!r}: its run computed on device {previous['device']!r} and "
                         f"this one on {meta['device']!r}, which changes the numbers. Resume with --device "
                         f"{previous['device']}, or use another --results-dir.")
    earlier = previous.get("earlier_runs") if isinstance(previous.get("earlier_runs"), list) else []
    return {"earlier_runs": [*earlier, {key: previous.get(key) for key in _PART_FACTS}]}


def _claims_are_current(experiment: Experiment, results_dir: Path) -> bool:
    """Whether a finished run's ``claims.json`` was written from its results: present, and no result is newer.

    True for an experiment without a ``report`` (it writes no claims). A finished run of this version
    always passes (the report is written after the numbers and before ``finished``); a directory an
    earlier version left after a Ctrl-C while the figures were drawn holds the previous run's claims,
    older than the numbers beside them.
    """
    if experiment._science("run", "report") is None:
        return True
    claims = results_dir / "claims.json"
    if not claims.is_file():
        return False
    written = claims.stat().st_mtime_ns
    for entry in toolkit_entries(results_dir):
        if entry.name in RUN_NAMES:  # run.json is rewritten after the report, figures are drawn after it
            continue
        paths = [entry]
        if entry.is_dir() and not entry.is_symlink():
            paths = [p for p in entry.rglob("*") if not p.is_dir()]
        if any(p.lstat().st_mtime_ns > written for p in paths):
            return False
    return True


def execute(experiment: Experiment, config, *, results_dir=None, setup: str | None = None, device: str | None = "auto",
            threads: int | None = None, resume: bool = False, data_dir=None, quiet: bool = False,
            plot: bool = True, formats=("png", "svg"), dpi: int = 150, overwrite: bool = False) -> RunOutcome:
    """Run ``experiment`` with a validated ``config`` into ``results_dir`` (see the module docstring).

    A fresh run (no ``resume``) into a folder that holds a run of other settings is refused unless ``overwrite``: it
    would delete that run's results (a re-run with one ``--set`` changed replaced a finished run in the setup's
    folder, a trial). A run of the same settings is replaced, with a notice: this run rewrites what it held.

    ``config`` may also be a plain mapping (validated here), such as a saved ``config.yaml`` as
    ``yaml.safe_load`` reads it: its ``experiment`` key must name ``experiment`` and is dropped.
    ``setup`` (the name the config came from) labels tables and figures; ``results_dir`` defaults
    to ``results/<experiment>/<setup>``.
    """
    if not isinstance(config, experiment.config_model):  # a saved config.yaml's `experiment` key is checked, dropped
        values = own_values(dict(config), experiment=experiment.name, others=_config_models,
                            where="the config mapping given to execute")
        config = validate(experiment.config_model, values, experiment=experiment.name)
    experiment.check_seeds(config)
    if resume and overwrite:
        raise ValueError("--resume continues the run in --results-dir (same settings) and --overwrite replaces one of "
                         "other settings: give one of them.")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or not 1 <= threads <= max_threads()):
        raise ValueError(f"--threads must be an int in [1, {max_threads()}] (4 per CPU of this machine, at least 64). "
                         f"Got {_shown(threads)} instead.")
    if results_dir is not None and not str(results_dir).strip():  # Path("") is ".": the results were written into
        # the current directory, beside whatever else is there
        raise ValueError(f"--results-dir must be a folder path. Got {str(results_dir)!r} (empty) instead.")
    results_dir = Path(results_dir) if results_dir is not None else experiment.default_results_dir(setup)
    values = config.model_dump(mode="json")
    ignore = set(experiment.resume_keys)
    from isotropy.datasets._paths import data_dir as resolve_data_dir

    label = _setup_label(setup)
    ctx = RunContext(experiment=experiment.name, results_dir=results_dir, setup=label, device=resolve_device(device),
                     threads=threads, resume=resume, data_dir=resolve_data_dir(data_dir).absolute(), quiet=quiet,
                     config_hash=config_hash(experiment.config_model.hashed_values(values), ignore=ignore))
    check_results_dir(results_dir)
    # the libraries' own bars (transformers' "Loading weights", the hub's) follow the run's: a terminal only
    with ResultsLock(results_dir), quiet_progress(quiet or not _stderr_is_a_terminal()):
        replacement = Replacement(results_dir)
        if replacement.recover():
            ctx.log(f"{results_dir}: restored the results a killed run had moved aside")
        finished, left = _check_resume(experiment, results_dir, values, ignore) if resume else (False, None)
        if left is not None:
            ctx.log(left + ".")
        # the same answer in every experiment, whether or not its `run` keeps parts: a finished run of this config
        # (claims current) is not entered again (frozen-classification recomputed it, sts-isotropy did not)
        gone = experiment.missing(config, results_dir) if finished else []
        if finished and not gone and _claims_are_current(experiment, results_dir):
            ctx.log(f"{results_dir}: this run has already finished with this config; nothing to run.")
            outcome = RunOutcome(results={}, results_dir=results_dir, skipped=True)
        else:
            if gone:  # removed by hand: `isotropy plot` sends the user here
                ctx.log(f"{results_dir}: this run finished, but {', '.join(gone)} {'is' if len(gone) == 1 else 'are'} "
                        f"not there; running again to rewrite {'it' if len(gone) == 1 else 'them'} (finished parts "
                        f"are kept).")
            elif finished:
                # Re-run rather than re-report: only `run` returns the results `report` takes (no experiment reads
                # them back), and this repairs only directories of earlier versions or ones changed by hand.
                ctx.log(f"{results_dir / 'claims.json'} is missing or older than the results; running again to "
                        f"rewrite it.")
            outcome = _run_locked(experiment, config, ctx, replacement, overwrite=overwrite)
        if plot:
            outcome.figures = save_figures(experiment.plot(results_dir), results_dir, formats=formats, dpi=dpi)
        elif not outcome.skipped and any((Path(results_dir) / "figures").glob("*")):  # --resume --no-plot
            ctx.log(f"{Path(results_dir) / 'figures'}: drawn from an earlier run's results, not from these "
                    f"(--no-plot); redraw them with: isotropy plot {results_dir}")
    return outcome


def _run_locked(experiment: Experiment, config, ctx: RunContext, replacement: Replacement, *,
                overwrite: bool = False) -> RunOutcome:
    with thread_limits(ctx.threads):
        started = _now()
        # before anything is loaded or written; run.json is made after prepare, which may settle the config
        earlier = _resume_conditions(_previous_meta(ctx.results_dir), {"device": ctx.device, "threads_in_effect":
                                                                       threads_in_effect()}, ctx.results_dir) \
            if ctx.resume else {}
        ctx.prepared = experiment.prepare(config, ctx)  # nothing written yet: a failure here changes nothing
        previous, previous_config = _replaced_run(ctx.results_dir)
        if ctx.resume and previous is None:
            ctx.log(f"{ctx.results_dir}: --resume found no earlier run there; starting a fresh run.")
        if not ctx.resume:
            if previous is not None:  # said also with --quiet: it deletes results (a trial's `--set` run replaced the
                # setup's finished run without a word); what differs, and how to keep both
                # compared as --resume compares them (hashed_values: a default changed since maps back to the old one,
                # so an identical re-run of a folder saved before is not taken for other settings)
                hashed = experiment.config_model.hashed_values
                changed = _changed_settings(None if previous_config is None else hashed(previous_config),
                                            hashed(config.model_dump(mode="json")))
                if changed and changed != _SAME_SETTINGS and not overwrite:  # after prepare: the settled config
                    raise ValueError(f"{ctx.results_dir} holds a {previous}{changed}: a fresh run there would delete "
                                     f"its results. Give --results-dir DIR to keep both, or --overwrite to replace it "
                                     f"(results_dir= and overwrite=True in Python).")
                _echo(f"{ctx.results_dir}: replacing the {previous} there (without --resume){changed}; its results "
                      f"are deleted once this run writes its first result, and put back if it stops before "
                      f"(--results-dir DIR runs it elsewhere and keeps both).")
            replacement.move_aside()
        else:
            replacement.committed = True
        meta = _Metadata(experiment, config, ctx)
        meta.meta.update({"started": started, **earlier})  # the start includes prepare (loading the model)
        # --resume: the records of the run resumed, put back if this one stops before it writes a result (a seed file
        # refused as another config's left config.yaml with the new seeds and run.json 'failed' beside the finished
        # results, which 'isotropy plot' then refused)
        kept = {name: (ctx.results_dir / name).read_bytes() for name in ("run.json", "config.yaml")
                if ctx.resume and (ctx.results_dir / name).is_file()}
        wrote = []

        def first_result():
            wrote.append(True)
            replacement.commit()

        ctx._on_first_result = first_result
        ctx._meta_update = meta.update
        try:
            meta.write()
            with warnings.catch_warnings():  # the experiments measure small batches on purpose (their reports say so)
                warnings.simplefilter("ignore", SpanBoundWarning)
                results = experiment.run(config, ctx.results_dir, ctx)
            wrote.append(True)  # its results written (aggregates too, which no part marks): never put back after this
            replacement.commit()
            # The report (claims.json) is the run's last step, not the command's after execute returns: written under
            # the lock, it is listed in the manifest and goes aside with the numbers it was decided on when a fresh
            # run starts; written before "finished", a run.json that says finished has this run's claims beside it
            # even when the figures below are interrupted. (Written after the lock was released, it was kept as the
            # user's file, and a Ctrl-C while the figures were drawn left a previous config's claims there.)
            report = experiment.report(results, ctx.results_dir)
        except BaseException as exc:
            if not replacement.committed:
                replacement.restore()  # the new run wrote no result: the previous run's files come back
            elif kept and not wrote:  # a resume that wrote nothing: the folder as it was
                for name, content in kept.items():
                    with atomic_write(ctx.results_dir / name, "wb") as handle:
                        handle.write(content)
            elif isinstance(exc, KeyboardInterrupt):  # Ctrl-C or SIGTERM: the user stopped it, nothing failed
                from isotropy._utils.errors import Terminated

                meta.update({"status": "interrupted", "ended": _now(),
                             "stopped_by": "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"})
                # what to do next, also with --quiet (the command's last line was "Terminated." alone, a trial)
                _echo(f"{ctx.results_dir}: interrupted; its finished parts are kept, and the same command with "
                      f"--resume finishes it.")
            else:
                message = " ".join(str(exc).split()) or type(exc).__name__
                meta.update({"status": "failed", "ended": _now(),
                             "error": f"{type(exc).__name__}: {message}",
                             "traceback": traceback.format_exc(limit=8)})
            raise
        meta.update({"status": "finished", "ended": _now()})
    return RunOutcome(results=results, results_dir=ctx.results_dir, report=report)
