"""Geometry logged during training, read back from the loggers' own files and drawn.

The callbacks (:class:`~isotropy.training.HFGeometryCallback`,
:class:`~isotropy.training.LightningGeometryCallback`) log ``geometry/<metric>/layer_<i>``
through the framework's loggers. :func:`read_geometry_log` reads those values back from what the
frameworks write — a Hugging Face output directory (``trainer_state.json``, also inside
``checkpoint-*``), a Lightning ``CSVLogger`` directory (``metrics.csv``), or a TensorBoard event
directory (``events.out.tfevents.*``, where HF prefixes ``train/``) — into one tidy table, and
:func:`plot_geometry_log` draws each metric against the step, one line per layer, with a
layer × step heat map beside it. ``isotropy plot PATH`` does both from the shell.
"""

from __future__ import annotations

import csv
import math
import os
import re
import warnings
from pathlib import Path

from isotropy._utils.errors import IsotropyValueError
from isotropy._utils.install import extra_command

__all__ = ["MAX_PLOTTED_LAYERS", "find_geometry_logs", "plot_geometry_log", "read_geometry_log"]

COLUMNS = ["metric", "layer", "step", "value", "source"]


def _key_pattern(prefix: str) -> re.Pattern:
    # "geometry/isoscore/layer_3", also under a logger's own prefix ("train/geometry/..."); a layer index has at
    # most 9 digits (a key of 10,000 digits is not a layer: int() of it would refuse, or take quadratic time)
    return re.compile(rf"^(?:.*/)?{re.escape(prefix)}/(?P<metric>[^/]+)/layer_(?P<layer>\d{{1,9}})$")


def find_geometry_logs(path: str | os.PathLike) -> list[Path]:
    """The log files under ``path`` that :func:`read_geometry_log` reads, by kind of log.

    The first kind found wins, in the order ``trainer_state.json`` (the top-level one, else the
    latest ``checkpoint-*``: it holds the whole history so far), ``metrics.csv`` (every
    Lightning version whose header names a ``.../layer_<i>`` column, in version order: version_10 after
    version_9), TensorBoard event files (in the order they were written). Event files beside such a
    ``metrics.csv`` (in its folder) are the same run's; event files apart from every one, like
    several Hugging Face runs, are another run: refused, naming them, so that one is chosen.
    """
    from isotropy.io._paths import path_kind

    path = Path(path).expanduser()
    if path.is_file():
        return [path]
    if not path.is_dir():
        kind = path_kind(path)
        if kind != "does not exist" and path.name.endswith(".json"):
            return [path]  # a FIFO, a device: refused unopened by the trainer_state.json reader, saying what it is
        expected = "expected a Hugging Face output directory, a Lightning CSVLogger directory or a TensorBoard event directory"
        if kind == "does not exist":
            raise FileNotFoundError(f"The training log {str(path)!r} does not exist: {expected}.")
        raise IsotropyValueError(f"The training log {str(path)!r} {kind}: {expected} (or a log file in one).")
    own = _hf_state(path)
    if own is not None:
        return [own]
    # Hugging Face runs in folders below (an output directory per run, as a sweep writes them): one is read as its
    # own; several, or one beside another framework's logs, are separate runs, never merged (a sweep's three runs
    # were read as one, the last one's values replacing the others' at every step)
    runs = {}
    # outer folders first (a run folder inside another run's, a "best" copy say, is part of that run, whatever its name)
    for file in sorted(path.glob("**/trainer_state.json"), key=lambda p: (len(p.parts), _natural_key(p))):
        folder = file.parent.parent if _CHECKPOINT.fullmatch(file.parent.name) else file.parent
        if folder != path and not any(folder.is_relative_to(other) for other in runs):
            state = _hf_state(folder)
            if state is not None:
                runs[folder] = state
    kinds_found, tables = [], []  # the logs of each kind (Lightning's tables, TensorBoard's events); other tables
    for pattern, order in (("**/metrics.csv", _natural_key), ("**/events.out.tfevents.*", _written_at)):
        found = sorted((p for p in path.glob(pattern) if p.is_file()), key=order)
        found = [p for p in found if not any(p.is_relative_to(folder) for folder in runs)]  # HF's own TensorBoard
        geometry = [p for p in found if _may_hold_geometry(p)]
        tables += [p for p in found if p not in geometry]
        if geometry:
            kinds_found.append(geometry)
    # Lightning's tables, then TensorBoard's events; event files in a folder of a table are the same run logged by
    # both loggers (the table is read). Event files apart from every table are another run, and a folder of both was
    # read from its tables alone, in silence (a user trial): refused, as several Hugging Face runs are, naming them
    others = kinds_found[0] if kinds_found else []
    apart = []
    if len(kinds_found) == 2:
        folders = {p.parent for p in kinds_found[0]}
        apart = [p for p in kinds_found[1] if p.parent not in folders]
    if not kinds_found and not runs:
        others = tables  # tables of no geometry only: read, and refused in one line saying why (beside an HF run,
        # other tables are not logs)
    if len(runs) > 1 or (runs and others) or apart:
        named = [str(folder.relative_to(path)) for folder in runs]
        for files in (others, apart):  # its folder, or the file itself in path (naming path again chooses nothing)
            if files:
                other = files[0].parent if files[0].parent != path else files[0]
                named.append(str(other.relative_to(path)) + (" and more" if len(files) > 1 else ""))
        kinds = "Hugging Face runs" if not others and not apart else "training logs"
        raise IsotropyValueError(f"The directory {str(path)!r} holds {len(named)} {kinds} ({', '.join(named)}), "
                                 f"read as separate runs: name the one to read.")
    if runs:
        return list(runs.values())
    if others:
        return others
    raise IsotropyValueError(f"The directory {str(path)!r} holds no training log: expected trainer_state.json "
                             f"(Hugging Face), metrics.csv (Lightning CSVLogger) or events.out.tfevents.* "
                             f"(TensorBoard).")


_CHECKPOINT = re.compile(r"checkpoint-\d+")


def _hf_state(folder: Path) -> Path | None:
    """The ``trainer_state.json`` of the Hugging Face output directory ``folder``: its own (``save_state``), else the
    latest ``checkpoint-*``'s (it holds the whole history so far), else ``None``."""
    top = folder / "trainer_state.json"
    if top.is_file() or (top.exists() and not top.is_dir()):  # a FIFO too: refused, not passed over for another log
        return top
    states = sorted(folder.glob("checkpoint-*/trainer_state.json"),
                    key=lambda p: int(p.parent.name.rsplit("-", 1)[-1]) if p.parent.name.rsplit("-", 1)[-1].isdigit()
                    else -1)
    return states[-1] if states else None


def _may_hold_geometry(path: Path) -> bool:
    """A ``metrics.csv`` whose header names a ``.../layer_<i>`` column (any other file: True). Other tables called
    metrics.csv (an experiment's results folder) were read as Lightning logs of the same run."""
    if path.name != "metrics.csv":
        return True
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            header = handle.readline(1 << 20)
    except OSError:
        return True  # read (and refused in one line) with the others
    return re.search(r"/layer_\d", header) is not None


def is_geometry_table(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a ``.csv`` file whose header holds the columns of :func:`read_geometry_log`'s table (the
    ``geometry.csv`` that ``isotropy plot`` writes beside its figures), which :func:`read_geometry_log` reads back."""
    path = Path(path).expanduser()
    if path.suffix.lower() != ".csv" or not path.is_file():
        return False
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            header = next(csv.reader([handle.readline(1 << 20)]), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False  # read (and refused in one line) as a log
    return set(COLUMNS[:4]) <= set(header)


def _natural_key(path: Path) -> tuple:
    """``path``'s parts with runs of digits compared as numbers: Lightning's version_10 comes after version_9
    (a plain sort put it before version_2, so an older version's value won at a step they share)."""
    from isotropy.io._paths import natural_key

    return tuple(natural_key(part) for part in path.parts)


def _written_at(path: Path) -> tuple:
    """A TensorBoard event file's creation time, from its name (``events.out.tfevents.<unix time>.<host>...``), then
    its path: run folders in the order they were written (Hugging Face's ``runs/Dec01_...`` sort by month name)."""
    parts = path.name.split(".")
    stamp = int(parts[3]) if len(parts) > 3 and parts[3].isdigit() and len(parts[3]) < 20 else -1
    return stamp, _natural_key(path)


def _several_runs_warning(path, files: list[Path]) -> str | None:
    """The warning for logs in several folders under ``path`` (Lightning versions, TensorBoard runs), read as one
    run; ``None`` for one folder (several event files in one folder are one run, restarted)."""
    folders = list(dict.fromkeys(f.parent for f in files))
    if len(folders) < 2:
        return None
    lightning = files[0].suffix == ".csv"
    kind, order = (("Lightning", "version order (version_10 after version_9)") if lightning
                   else ("TensorBoard", "the order their event files were written"))
    shown = ", ".join(str(f.relative_to(path)) for f in folders[:3]) + (", ..." if len(folders) > 3 else "")
    return (f"read_geometry_log: {len(folders)} {kind} logs under {str(path)!r} ({shown}) are read as one run, in "
            f"{order}, a later log's value replacing an earlier one's at the same step (a resumed run logs into a "
            f"new folder); name one folder to read that run alone.")


def _separate_runs_error(path: Path, files: list[Path], rows: list) -> str | None:
    """The error for logs in several folders under ``path`` that are separate runs, not one resumed run; ``None``
    when each later folder's geometry starts after every earlier folder's first step (a resumed run logs into a new
    folder from the step it resumed at). Lightning makes a version folder for every script run: a crashed run's
    step 0 and a later run's steps were merged into one table."""
    # TensorBoard: each event file is one writer's session, so two runs that wrote into one folder (a script run twice
    # with the same SummaryWriter folder) are told apart too, where a restart of one run writes on from its step
    lightning = files[0].suffix == ".csv"
    unit = (lambda source: Path(source).parent) if lightning else Path
    folders = list(dict.fromkeys(unit(f) for f in files))
    if len(folders) < 2:
        return None
    first = {}
    for *_, step, _value, source in rows:
        folder = unit(source)
        first[folder] = min(step, first.get(folder, step))
    folders = [f for f in folders if f in first]  # (a folder without a geometry value is no run of its own here)
    runs, clash = [], None
    for index, folder in enumerate(folders):
        earlier = [f for f in folders[:index] if first[f] >= first[folder]]
        if index and not earlier:
            runs[-1].append(folder)  # a resume of the run before it
            continue
        runs.append([folder])
        if earlier and clash is None:
            clash = folder, earlier[0]
    if clash is None:
        return None

    def named(unit: Path) -> str:  # an event file by its folder where that folder holds no other, as a run's folder
        alone = not lightning and unit.parent != path and sum(f.parent == unit.parent for f in folders) == 1
        return str((unit.parent if alone else unit).relative_to(path))

    name = {folder: named(folder) for folder in folders}
    kind = "Lightning" if lightning else "TensorBoard"
    shown = ", ".join(" resumed in ".join(name[f] for f in run) for run in runs)
    later, earlier = clash
    # a run resumed over several folders has no one path of its own here: said how to read it whole (a review)
    spread = any(len(run) > 1 for run in runs)
    whole = ("; to read a resumed run whole, move the other runs' logs out and name the directory again" if spread
             else "")
    return (f"The directory {str(path)!r} holds {len(runs)} {kind} runs ({shown}), read as separate runs: name the "
            f"one to read ({name[later]}'s geometry starts at step {first[later]}, at or before {name[earlier]}'s "
            f"first step {first[earlier]}: a resumed run starts after it){whole}.")


# The largest trainer_state.json read (it is parsed whole): a 500,000-step run logging its loss every 10 steps and
# 32 layers x 3 metrics every 100 steps writes about 30 MB
_MAX_TRAINER_STATE_BYTES = 256 * 2**20


def _rows_trainer_state(file: Path, pattern):
    from isotropy.io._paths import read_json

    expected = "a JSON object with a 'log_history' list"
    try:  # the bounded reader: a FIFO or a device refused unopened, at most _MAX_TRAINER_STATE_BYTES read
        state = read_json(file, what="training log", expected=expected, limit=_MAX_TRAINER_STATE_BYTES)
    except (IsotropyValueError, FileNotFoundError) as exc:  # nested too deeply, an integer of 5,000 digits, not UTF-8
        raise IsotropyValueError(f"The file {str(file)!r} is not a Hugging Face trainer_state.json (it {exc.problem}): "
                                 f"expected {expected}.") from None
    if not isinstance(state, dict):
        raise IsotropyValueError(f"The file {str(file)!r} is not a Hugging Face trainer_state.json (it holds a JSON "
                                 f"{type(state).__name__}): expected {expected}.")
    history = state.get("log_history")
    if not isinstance(history, list):
        raise IsotropyValueError(f"The file {str(file)!r} has no 'log_history' list: expected a Hugging Face "
                                 f"trainer_state.json.")
    for entry in history:
        if not isinstance(entry, dict) or "step" not in entry:
            continue
        for key, value in entry.items():
            match = pattern.match(str(key))
            # a float (NaN and infinities too: read_geometry_log leaves them out, and names a metric that is all of
            # them), or an int within float's range
            if match and (isinstance(value, float) or (isinstance(value, int) and abs(value) < 1e308)):
                yield match["metric"], int(match["layer"]), _step(entry["step"], file), float(value)


def _step(value, file: Path) -> int:
    """A logged step as an int; anything that is not a finite number is a corrupt log, refused in one line."""
    try:
        step = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int of 400 digits
        step = math.nan
    if not math.isfinite(step) or isinstance(value, bool):
        raise IsotropyValueError(f"The training log {str(file)!r} has the step {str(value)[:40]!r}: expected a "
                                 f"finite number.")
    return int(step)


def _rows_csv(file: Path, pattern):
    try:
        yield from _csv_rows(file, pattern)
    except (csv.Error, UnicodeDecodeError) as exc:  # a field past csv's limit, a NUL byte, not UTF-8
        raise IsotropyValueError(f"The file {str(file)!r} is not a readable CSV ({' '.join(str(exc).split())[:120]}): "
                                 f"expected a Lightning CSVLogger metrics.csv.") from None


def _csv_rows(file: Path, pattern):
    with open(file, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is not None and set(COLUMNS[:4]) <= set(reader.fieldnames):
            yield from _table_rows(file, reader)  # the table read_geometry_log returns (geometry.csv of the figures)
            return
        if reader.fieldnames is None or "step" not in reader.fieldnames:
            raise IsotropyValueError(f"The file {str(file)!r} has no 'step' column: expected a Lightning CSVLogger "
                                     f"metrics.csv, or the geometry.csv that 'isotropy plot' writes.")
        keys = [(k, pattern.match(k)) for k in reader.fieldnames]
        keys = [(k, m) for k, m in keys if m]
        for row in reader:
            for key, match in keys:
                text = row.get(key)
                if text not in (None, ""):
                    try:
                        value = float(text)
                    except ValueError:
                        raise IsotropyValueError(f"The file {str(file)!r} has the value {text[:40]!r} in column "
                                                 f"{key!r}: expected a number.") from None
                    yield match["metric"], int(match["layer"]), _step(row["step"], file), value


def _table_rows(file: Path, reader):
    """The rows ``(metric, layer, step, value, source)`` of a table of :data:`COLUMNS` (the ``geometry.csv`` that
    ``isotropy plot`` writes beside its figures, or ``read_geometry_log(...).to_csv``): redrawn from it, the figures
    are those of the log it was read from. ``source`` is the table's own column where it has one, else the table."""
    for line, row in enumerate(reader, start=2):
        metric, layer, value = row.get("metric") or "", row.get("layer") or "", row.get("value") or ""
        if not metric or "/" in metric or not re.fullmatch(r"\d{1,9}", layer.strip()):
            raise IsotropyValueError(f"The file {str(file)!r} has the metric {metric[:40]!r} and layer "
                                     f"{layer[:40]!r} on line {line}: expected a metric name and a layer number, as "
                                     f"the geometry.csv of 'isotropy plot' holds.")
        try:
            number = float(value)
        except ValueError:
            raise IsotropyValueError(f"The file {str(file)!r} has the value {value[:40]!r} on line {line}: expected "
                                     f"a number.") from None
        yield metric, int(layer), _step(row["step"], file), number, row.get("source") or str(file)


# A record cut short at the end of a file is one a run is still writing (tensorboard reads the records before it and
# skips it), unless it declares more data than any event holds: tensorboard's one read of that length would ask for
# it all at once (2**40 bytes: a MemoryError). Events are scalars, histograms and images of at most a few MiB.
_PARTIAL_RECORD = 2**28


def _check_event_file(file: Path) -> None:
    """Walk the TFRecord framing of an event file before tensorboard reads it; a record longer than the file is refused.

    Each record is an 8-byte little-endian data length, the masked CRC-32C of those 8 bytes, the data and the data's
    masked CRC-32C. Tensorboard's reader asks the file for a record's declared length in one read: a 28-byte file
    declaring 2**40 bytes (with a valid CRC of the length) was a MemoryError traceback. Here each record's length is
    checked against the bytes left in the file (seeking past the data, nothing of it is read); one that does not
    fit is the record a run is still writing when it declares at most ``_PARTIAL_RECORD`` bytes (the walk ends there,
    as tensorboard's reading does), and is refused in one line naming the file otherwise. A length whose CRC does not match ends the walk: tensorboard stops
    reading the file there too, before it reads any data (and a header cut short at the end is a tail it skips).
    """
    import struct

    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    try:
        size = file.stat().st_size
        with open(file, "rb") as handle:
            offset = 0
            while size - offset >= 12:
                handle.seek(offset)
                header = handle.read(12)
                if len(header) < 12:
                    return
                (length,), (crc,) = struct.unpack("<Q", header[:8]), struct.unpack("<I", header[8:])
                if masked_crc32c(header[:8]) != crc:
                    return  # a corrupt length: tensorboard reads no further (and no data of it)
                left = size - offset - 12
                if length + 4 > left:
                    if length <= _PARTIAL_RECORD:  # the last record of a run still writing: tensorboard skips it
                        return
                    raise IsotropyValueError(
                        f"The TensorBoard event file {str(file)!r} is truncated or corrupt: its record at byte "
                        f"{offset:,} declares {length:,} bytes of data (and a 4-byte CRC), and only {left:,} bytes "
                        f"follow; "
                        f"expected an events.out.tfevents.* file a SummaryWriter wrote (a run still writing it may "
                        f"not have flushed it yet: read it again later).")
                offset += 12 + length + 4
    except OSError as exc:
        raise IsotropyValueError(f"The TensorBoard event file {str(file)!r} cannot be read: "
                                 f"{' '.join(str(exc).split())}.") from None


def _rows_tensorboard(file: Path, pattern):
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raise ImportError(f"Reading TensorBoard event files needs tensorboard: {extra_command('train')}") from None
    _check_event_file(file)
    accumulator = EventAccumulator(str(file), size_guidance={"scalars": 0}).Reload()
    for tag in accumulator.Tags().get("scalars", []):
        match = pattern.match(tag)
        if match:
            for event in accumulator.Scalars(tag):
                yield match["metric"], int(match["layer"]), int(event.step), float(event.value)


def read_geometry_log(path: str | os.PathLike, *, prefix: str = "geometry"):
    """Read the geometry a training run logged into a tidy table.

    Parameters
    ----------
    path : path-like
        A Hugging Face output directory or its ``trainer_state.json``; a Lightning ``CSVLogger``
        directory or its ``metrics.csv``; a TensorBoard event directory or event file.
    prefix : str, default="geometry"
        The first part of the logged keys ``<prefix>/<metric>/layer_<i>`` (the callbacks' ``prefix``).

    Returns
    -------
    pandas.DataFrame
        Columns ``metric``, ``layer``, ``step``, ``value``, ``source`` (the file read), one row per
        logged value, sorted by metric, layer and step. A value logged twice for the same step
        (a resumed run) keeps the last one.

    Raises
    ------
    IsotropyValueError
        When the log holds no ``<prefix>/<metric>/layer_<i>`` value, or when its folders (Lightning
        versions, TensorBoard runs) hold separate runs: a folder whose geometry starts at or before an
        earlier folder's first step is not a resume of it (folders that are one resumed run are read
        as one, with a warning).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> run = pathlib.Path(tempfile.mkdtemp())
    >>> history = [{"step": 0, "geometry/isoscore/layer_1": 0.1}, {"step": 10, "loss": 0.7},
    ...            {"step": 10, "geometry/isoscore/layer_1": 0.05}]
    >>> _ = (run / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    >>> read_geometry_log(run)[["metric", "layer", "step", "value"]].values.tolist()
    [['isoscore', 1, 0, 0.1], ['isoscore', 1, 10, 0.05]]
    """
    import pandas as pd

    if not isinstance(prefix, str) or not prefix:
        raise IsotropyValueError(f"The 'prefix' parameter of read_geometry_log must be a non-empty str. Got {prefix!r}.")
    pattern = _key_pattern(prefix)
    rows = []
    files = find_geometry_logs(path)
    for file in files:
        if file.name.endswith(".json"):
            reader = _rows_trainer_state
        elif file.suffix == ".csv":
            reader = _rows_csv
        elif "tfevents" in file.name:
            reader = _rows_tensorboard
        else:
            raise IsotropyValueError(f"The file {str(file)!r} is not a training log: expected trainer_state.json, "
                                     f"a metrics.csv or a TensorBoard events.out.tfevents.* file.")
        rows.extend(row if len(row) == 5 else (*row, str(file)) for row in reader(file, pattern))
    separate = _separate_runs_error(Path(path).expanduser(), files, rows)
    if separate is not None:
        raise IsotropyValueError(separate)
    several = _several_runs_warning(Path(path).expanduser(), files)
    if several is not None:
        warnings.warn(several, UserWarning, stacklevel=2)
    undefined = sorted({r[0] for r in rows} - {r[0] for r in rows if math.isfinite(r[3])})
    if undefined:  # (a metric the callbacks log as NaN where it is undefined, e.g. rogue_dimension_share)
        warnings.warn(f"{', '.join(undefined)}: every logged value is NaN or infinite (undefined at every step and "
                      f"layer), so {'it is' if len(undefined) == 1 else 'they are'} left out of the table and the "
                      f"figures.", UserWarning, stacklevel=2)
    rows = [r for r in rows if math.isfinite(r[3])]
    if not rows:
        raise IsotropyValueError(f"The training log {str(path)!r} holds no '{prefix}/<metric>/layer_<i>' value: "
                                 f"expected a run logged with HFGeometryCallback or LightningGeometryCallback.")
    frame = pd.DataFrame(rows, columns=COLUMNS)
    conflict = _conflicting_entries(frame)
    if conflict is not None:
        warnings.warn(conflict, UserWarning, stacklevel=2)
    frame = frame.drop_duplicates(subset=["metric", "layer", "step"], keep="last")
    return frame.sort_values(["metric", "layer", "step"], kind="stable").reset_index(drop=True)


def _conflicting_entries(frame) -> str | None:
    """A warning for values of one (metric, layer, step) that one file gives twice, differently (a geometry.csv edited
    or joined by hand): the last of each is kept, as a resumed run's later files replace its earlier ones, but within
    one file which one is meant is not known, and two values of 0.5 and 0.6 were drawn as 0.6 without a word (a user
    trial). Repeats of one value say nothing and are not warned of."""
    keys = ["source", "metric", "layer", "step"]
    repeated = frame[frame.duplicated(subset=keys, keep=False)]
    if repeated.empty:
        return None
    spread = repeated.groupby(keys, sort=False)["value"].nunique()
    differing = spread[spread > 1]
    if differing.empty:
        return None
    source, metric, layer, step = differing.index[0]
    values = repeated.set_index(keys).loc[(source, metric, layer, step), "value"].tolist()
    count = f"{len(differing)} (metric, layer, step) {'entry' if len(differing) == 1 else 'entries'}"
    return (f"{source!r} holds more than one value for {count} (first: {metric} at layer {layer}, step {step}: "
            f"{', '.join(f'{v:.6g}' for v in values)}); the last of each is drawn.")


#: The most layers of one metric :func:`plot_geometry_log` draws: each is a line over every step of the metric and a
#: row of the heat map, work and memory of layers x steps. The deepest models have about 130 layers; a log naming a
#: layer of its own in each entry (a trainer_state.json of a few hundred KB) drew thousands of lines and heat-map rows.
MAX_PLOTTED_LAYERS = 256


def plot_geometry_log(frame) -> dict:
    """Figures of a geometry log: per metric, the value against the step (one line per layer) and a heat map.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table :func:`read_geometry_log` returns.

    Returns
    -------
    dict
        ``{"geometry_<metric>": Figure}``; each figure has two panels: the curves (viridis from the
        first layer to the last) and the layer × step heat map of the same values.

    Raises
    ------
    IsotropyValueError
        A metric logged for more than :data:`MAX_PLOTTED_LAYERS` layers (none is drawn).
    """
    import numpy as np
    from matplotlib.figure import Figure

    for metric, part in frame.groupby("metric", sort=True):  # all refused before any is drawn
        layers = part["layer"].unique()
        if len(layers) > MAX_PLOTTED_LAYERS:
            raise IsotropyValueError(f"The geometry log holds {len(layers)} layers of {metric!r} (layer_{layers.min()} "
                                     f"to layer_{layers.max()}); expected at most {MAX_PLOTTED_LAYERS}, a model's "
                                     f"layers, each drawn as a line over every step.")
    figures = {}
    for metric, part in frame.groupby("metric", sort=True):
        layers = sorted(part["layer"].unique())
        steps = sorted(part["step"].unique())
        fig = Figure(figsize=(11, 4.2), layout="constrained")
        ax_lines, ax_map = fig.subplots(1, 2, width_ratios=[1.15, 1])
        import matplotlib

        cmap = matplotlib.colormaps["viridis"]
        for k, layer in enumerate(layers):
            # on every step of the metric: a step where this layer's value was undefined (left out of the table) is a
            # gap in its line, not a segment joining the steps around it
            rows = part[part["layer"] == layer].set_index("step")["value"].reindex(steps)
            ax_lines.plot(rows.index, rows.to_numpy(), marker="o", ms=3, lw=1.3,
                          color=cmap(k / max(1, len(layers) - 1)), label=f"layer {layer}")
        ax_lines.set_xlabel("training step")
        ax_lines.set_ylabel(metric)
        ax_lines.grid(alpha=0.3)
        ax_lines.legend(fontsize=8, ncols=1 + len(layers) // 10, loc="best")
        grid = np.full((len(layers), len(steps)), np.nan)
        li, si = {v: i for i, v in enumerate(layers)}, {v: i for i, v in enumerate(steps)}
        for layer, step, value in part[["layer", "step", "value"]].itertuples(index=False):
            grid[li[layer], si[step]] = value
        image = ax_map.imshow(np.ma.masked_invalid(grid), aspect="auto", origin="lower", cmap="viridis",
                              interpolation="nearest")
        ax_map.set_yticks(range(len(layers)), [str(v) for v in layers])
        every = max(1, len(steps) // 8)
        ax_map.set_xticks(range(0, len(steps), every), [str(steps[i]) for i in range(0, len(steps), every)])
        ax_map.set_xlabel("training step")
        ax_map.set_ylabel("layer")
        fig.colorbar(image, ax=ax_map, label=metric)
        fig.suptitle(f"{metric} per layer during training", fontsize=11)
        figures[f"geometry_{metric}"] = fig
    return figures
