"""Command-line interface: ``isotropy measure``, ``isotropy run EXPERIMENT``, ``isotropy plot``.

Subcommands are imported only when invoked, so ``isotropy --help`` is fast. Errors in user
input are printed as one line (``Error: ...``) with exit status 2 and no traceback.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import warnings
from pathlib import Path

import click

from isotropy._utils.click_types import BoundedInt, NonEmpty
from isotropy._utils.errors import Terminated, debugging
from isotropy._utils.install import install_command, missing_module_hint
from isotropy.experiments import _registry
from isotropy.experiments._registry import EXPERIMENTS
from isotropy.experiments._registry import load_target as _load


def load_experiment(name: str):
    """The :class:`~isotropy.experiments._runner.Experiment` record called ``name``, from this module's
    :data:`EXPERIMENTS` (the registry's table, which tests extend here)."""
    return _registry.load_experiment(name, experiments=EXPERIMENTS)


class _LazyGroup(click.Group):
    def __init__(self, *args, lazy: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self._lazy = lazy

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self._lazy))

    def get_command(self, ctx, name):
        if name in self._lazy:
            return _load(self._lazy[name])
        return super().get_command(ctx, name)

    def resolve_command(self, ctx, args):
        return _resolve_or_suggest(self, ctx, args)


def _resolve_or_suggest(group: click.Group, ctx, args):
    """Resolve a subcommand; an unknown name is a one-line usage error with the closest name and every choice."""
    name = args[0] if args else None
    # not while the shell completes a word (resilient parsing): the error was printed into the command line being typed
    if name is not None and not name.startswith("-") and not ctx.resilient_parsing \
            and group.get_command(ctx, name) is None:
        from isotropy._utils.suggest import did_you_mean

        choices = group.list_commands(ctx)
        raise click.UsageError(f"Unknown command {name!r} for '{ctx.command_path}'; expected one of "
                               f"{', '.join(choices)}.{did_you_mean(name, choices)}")
    return super(type(group), group).resolve_command(ctx, args)


class _ExperimentGroup(click.Group):
    """``isotropy run NAME``: each command is made by the one factory from the experiment's record."""

    def list_commands(self, ctx):
        return sorted(EXPERIMENTS)

    def shell_complete(self, ctx, incomplete):
        """The experiment names that start with ``incomplete`` (from :data:`EXPERIMENTS`: none is imported, so
        <Tab> is quick and works on a core install), then ``run``'s own options."""
        from click.shell_completion import CompletionItem

        names = [CompletionItem(name) for name in sorted(EXPERIMENTS) if name.startswith(incomplete)]
        return names + click.Command.shell_complete(self, ctx, incomplete)

    def get_command(self, ctx, name):
        if name not in EXPERIMENTS:
            return None
        try:
            from isotropy.experiments._command import make_command

            return make_command(load_experiment(name))
        except ImportError as exc:  # a core install: the experiments need their extra (pydantic, torch, ...)
            # PyTorch's CPU command first where torch is missing too: the extra's bare torch pulls the CUDA build
            command = install_command("experiments", torch_missing=None)
            detail = " ".join(str(exc).split())
            if missing_module_hint(getattr(exc, "name", None)) is None:  # not a package an extra brings: said so,
                # rather than "needs the experiments extra" where it may be installed (a broken or partial install)
                return _Unavailable(name, f"isotropy run could not load the experiment '{name}' ({detail}); "
                                          f"reinstalling the experiments extra may help: {command}.")
            return _Unavailable(name, f"isotropy run needs the experiments extra: {command} ({detail}).")

    def format_commands(self, ctx, formatter):
        """The experiments and their short help; on a core install their names, then the one line of the extra they
        need (the help was that line as an error before: each command is made from the experiment's record)."""
        super().format_commands(ctx, formatter)
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if isinstance(command, _Unavailable):  # (all of them, on a core install)
                formatter.write_paragraph()
                formatter.write(f"{command.missing}\n")  # unwrapped: the install command stays whole, to copy
                return

    def resolve_command(self, ctx, args):
        return _resolve_or_suggest(self, ctx, args)


class _Unavailable(click.Command):
    """An experiment whose extra is not installed: running it is the one-line error ``missing`` (exit 2), its --help
    is its usage and that line; it takes any words, and shell completion (<Tab>) offers none, since the error was
    printed into the command line being typed."""

    def __init__(self, name: str, missing: str):
        super().__init__(name, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
        self.missing = missing

    def invoke(self, ctx):
        error = click.ClickException(self.missing)
        error.exit_code = 2  # as every other missing optional package
        raise error

    def get_short_help_str(self, limit: int = 45) -> str:
        return ""  # the group's help says it once, below the names

    def format_epilog(self, ctx, formatter):
        formatter.write_paragraph()
        formatter.write(f"{self.missing}\n")  # unwrapped, as in the group's help

    def shell_complete(self, ctx, incomplete):
        return []


@click.group(cls=_LazyGroup, lazy={"measure": "isotropy.measure.command:command"},
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="isotropy")
def cli():
    """Geometry of embedding spaces: isotropy, clusters and intrinsic dimension."""


@cli.group(cls=_ExperimentGroup, short_help="Run a published experiment of the four papers.")
def run():
    """Run a published experiment (one config file per setup; every value overridable with --set)."""


def _formats(ctx, param, value):
    from isotropy.experiments._command import parse_formats

    return parse_formats(value)


@cli.command()
@click.argument("path", type=NonEmpty(click.Path(exists=True, path_type=Path),
                                      dash="(standard input), from which nothing is plotted: PATH is a run's results "
                                           "folder, a training log or a JSON of 'isotropy measure --model', each "
                                           "told by what is on disk"))
@click.option("--out", "out_dir", type=NonEmpty(click.Path(file_okay=False, path_type=Path), expected="a folder path"),
              default=None,
              help="The folder the figures are written into (default: PATH/figures for a run's results, "
                   "PATH/geometry-figures for a training log, the folder of a geometry.csv, the JSON's folder for a "
                   "measure JSON).")
@click.option("--format", "formats", default="png,svg", show_default=True, callback=_formats,
              help="Comma-separated figure formats, e.g. png,svg,pdf.")
@click.option("--dpi", type=BoundedInt(min=10, max=2400), default=150, show_default=True,
              help="Resolution of raster formats (dots per inch).")
def plot(path: Path, out_dir: Path | None, formats, dpi: int):
    """Draw the figures of PATH without re-running anything.

    PATH is either the results directory of an 'isotropy run' (it has a run.json: the experiment's
    figures are redrawn), or a training log of the geometry callbacks: a Hugging Face output
    directory (trainer_state.json), a Lightning CSVLogger directory (metrics.csv) or a TensorBoard
    event directory. For a log, each geometry metric is drawn against the step, one line per layer,
    beside a layer x step heat map, and the values are written to geometry.csv, which PATH may also
    be (its figures are drawn again beside it). PATH may also be the JSON of 'isotropy measure
    --model M --texts T --json FILE': its per-layer figure (that of --plot) is drawn beside it
    (NAME-layers.png for NAME.json), without loading the model again. --out DIR is the
    folder the figures are written into, for either kind of PATH; for a run, DIR is a folder outside
    it, or the run's own folder (its figures/ then, as without --out); a folder of another run is refused
    (RUN/.previous may draw into RUN), and figures drawn into a run's folder are drawn under that run's lock.
    """
    import matplotlib

    matplotlib.use("Agg")  # this command only writes files: no GUI backend (a library call never does this)
    from isotropy.experiments._runner import save_figures

    meta = path / "run.json"
    # a run.json that is there but no regular file (a FIFO, a link to /dev/zero) is refused as the run's record, not
    # read as a training log (whose error spoke of the geometry callbacks)
    if path.is_dir() and (meta.exists() or meta.is_symlink()):
        from isotropy.experiments._files import read_json

        # a regular file of bounded size; not UTF-8, not JSON, nested too deeply: one line naming it
        record = read_json(meta, what="run record", expected="the run.json an 'isotropy run' writes")
        experiment = record.get("experiment") if isinstance(record, dict) else None
        if experiment not in EXPERIMENTS:
            raise click.UsageError(f"run.json in {str(path)!r} names experiment {experiment!r}; "
                                   f"expected one of {sorted(EXPERIMENTS)}.")
        import contextlib

        from isotropy.experiments._results_dir import ResultsLock

        # figures drawn into a run's directory are the run's: drawn under its lock, they are listed in its manifest
        # and go aside with its numbers when a fresh run starts there. That run is PATH's own without --out, else
        # the one --out lies in (PATH itself, the run whose .previous/ PATH is, or another run), if any.
        run_dir = path.resolve() if out_dir is None else _run_dir_of(out_dir)
        if run_dir is not None and out_dir is not None:
            from isotropy.experiments._results_dir import PREVIOUS_NAME

            own = {path.resolve()} | ({path.resolve().parent} if path.resolve().name == PREVIOUS_NAME else set())
            if run_dir not in own:  # a trial: another finished run's figures were replaced by these, and listed as its
                raise click.UsageError(f"--out {str(out_dir)!r} is in the run in {str(run_dir)!r}, not {str(path)!r}: "
                                       f"figures there would replace that run's own. Name a folder outside any run, "
                                       f"or leave out --out to draw them into {str(path / 'figures')!r}.")
            if out_dir.resolve() == path.resolve():
                out_dir = None  # --out PATH: PATH/figures/ as without --out
            elif out_dir.resolve() == run_dir:
                out_dir = out_dir / "figures"  # at a run's top level they would be results
            elif not _inside(out_dir, run_dir / "figures"):
                leave = (f"Leave out --out to draw them into {str(path / 'figures')!r}"
                         if run_dir == path.resolve() else f"Name {str(run_dir / 'figures')!r}")
                raise click.UsageError(f"--out {str(out_dir)!r} is a folder of the run in {str(run_dir)!r}: "
                                       f"figures there would count as its results (the next --resume would run it "
                                       f"again). {leave}, or name a folder outside the run.")
        lock_dir = None if run_dir is None else _lock_dir(run_dir)
        unfinished = _unfinished_run(path, record, locking=lock_dir == path.resolve())
        if unfinished is not None:
            raise ValueError(unfinished)
        with ResultsLock(lock_dir, purpose="plot") if lock_dir is not None else contextlib.nullcontext():
            try:
                figures = load_experiment(experiment).plot(path)
            except (KeyError, IndexError, TypeError, AttributeError, RecursionError) as exc:
                # a results file emptied ({}), nested without end or of another shape: a traceback from deep in the
                # experiment's plot code before; said in one line (the error kept as a cause, for a bug of ours)
                what = f"no {exc.args[0]!r} where expected" if isinstance(exc, KeyError) and exc.args else \
                    ("nested too deeply to read" if isinstance(exc, RecursionError) else
                     f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
                raise ValueError(f"The results in {str(path)!r} cannot be drawn as {experiment}'s figures: a results "
                                 f"file there holds something else ({what}); were they edited, or written by another "
                                 f"version? Re-run the experiment into this folder.") from exc
            if out_dir is not None:  # D is the figures' folder, as for a training log: D/x.png, not D/figures/x.png
                figures = {key.removeprefix("figures/"): fig for key, fig in figures.items()}
                _make_out_dir(out_dir, True)
            written = save_figures(figures, out_dir or path, formats=formats, dpi=dpi)
        for saved in written:
            click.echo(str(saved))
        return
    if path.is_file() and path.suffix.lower() == ".json" and path.name != "trainer_state.json":
        from isotropy.measure.figure import layers_figure, read_layers_json

        record = read_layers_json(path)  # None: JSON of another kind, read below as a training log
        if record is not None:
            given = out_dir is not None
            out_dir = out_dir or path.parent
            with _outside_results(out_dir, None if given else "The JSON's folder"):
                _make_out_dir(out_dir, given)
                for saved in save_figures({f"{path.stem}-layers": layers_figure(record)}, out_dir, formats=formats,
                                          dpi=dpi):
                    click.echo(str(saved))
            return
    interrupted = _run_without_record(path)
    if interrupted is not None:  # not a training log: a run killed before it wrote its run.json
        raise ValueError(interrupted)
    runs = _runs_below(path)
    if runs:  # results/ or results/<experiment>/: a run's metrics.csv was read as a Lightning log
        shown = ", ".join(repr(str(run)) for run in runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
        raise ValueError(f"{str(path)!r} is not the results folder of one run, but holds {len(runs)} run"
                         f"{'' if len(runs) == 1 else 's'} ({shown}); plot one of them: isotropy plot RUN_FOLDER.")
    from isotropy._utils.atomic import atomic_write
    from isotropy.training.logs import plot_geometry_log, read_geometry_log

    with warnings.catch_warnings(record=True) as caught:  # printed as one line each, as 'isotropy run' does
        warnings.simplefilter("always", UserWarning)
        try:
            frame = read_geometry_log(path)
        except ValueError as exc:
            text = str(exc)
            if "not a training log" in text or "holds no training log" in text:  # none of the three kinds PATH may be
                raise type(exc)(f"{text.rstrip('.')}; 'isotropy plot' also draws the results folder of an 'isotropy "
                                f"run' (it holds a run.json) and the JSON of 'isotropy measure --model M --texts T "
                                f"--json FILE'.") from None
            raise
    for warning in caught:
        click.echo(f"Warning: {' '.join(str(warning.message).split())}", err=True)
    given = out_dir is not None
    from isotropy.io._paths import _same_file, check_not_an_input
    from isotropy.training.logs import find_geometry_logs, is_geometry_table

    table = is_geometry_table(path)  # the geometry.csv of earlier figures: redrawn beside it by default
    out_dir = out_dir or (path.parent if table else (path if path.is_dir() else path.parent) / "geometry-figures")
    # the table itself as the figures' table: the same values, not written over the file being read
    rewrite = not (table and (out_dir / "geometry.csv").exists() and _same_file(out_dir / "geometry.csv", path))
    for log in find_geometry_logs(path) if rewrite else ():  # --out onto the log's own folder: a file named geometry.csv
        check_not_an_input({"--out": out_dir / "geometry.csv"}, {"the training log": log})
    with _outside_results(out_dir, None if given else "The log's figures folder"):  # --out refused before drawing
        figures = plot_geometry_log(frame)  # a log it refuses (too many layers) leaves no folder and no geometry.csv
        _make_out_dir(out_dir, given)
        if rewrite:
            with atomic_write(out_dir / "geometry.csv") as handle:
                frame.to_csv(handle, index=False)
            click.echo(str(out_dir / "geometry.csv"))
        for saved in save_figures(figures, out_dir, formats=formats, dpi=dpi):
            click.echo(str(saved))


def _make_out_dir(out_dir: Path, given: bool) -> None:
    """Make the figures' folder ``out_dir`` (and the folders above it), refused in one line that names --out (``given``)
    or the default folder: an OSError's own words ("[Errno 2] No such file or directory: '/proc/x'") named neither the
    option nor what it expects (a user trial)."""
    what = f"--out {str(out_dir)!r}" if given else f"The figures folder {str(out_dir)!r}"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in [out_dir, *out_dir.parents] if p.exists() and not p.is_dir()), None)
        why = (f"{str(blocker)!r} on its way is a file, not a directory" if blocker is not None else
               (exc.strerror or type(exc).__name__).lower())
        raise ValueError(f"{what} cannot be made ({why}); expected a folder path where this user can write.") from None


def _outside_results(out_dir: Path, default: str | None):
    """The context to write figures of a training log or a measure JSON into ``out_dir`` in: refused in an 'isotropy run'
    folder but under its ``figures/`` (anything else there counts as one of its results: the next --resume would run
    it again), and under the run's lock inside its ``figures/``. ``default``: what ``out_dir`` is when --out was not
    given ("The JSON's folder"), for the message; ``None`` when it was."""
    import contextlib

    run_dir = _run_dir_of(out_dir)
    if run_dir is None:
        return contextlib.nullcontext()
    if not _inside(out_dir, run_dir / "figures"):
        where = f"--out {str(out_dir)!r}" if default is None else \
            f"{default} {str(out_dir)!r} (where the figures go without --out)"
        raise click.UsageError(f"{where} is a folder of the run in {str(run_dir)!r}: figures there would count as its "
                               f"results (the next --resume would run it again). {'Name' if default is None else 'Give --out'} "
                               f"{str(run_dir / 'figures')!r} or a folder outside the run.")
    from isotropy.experiments._results_dir import ResultsLock

    return ResultsLock(_lock_dir(run_dir), purpose="plot")


def _runs_below(path: Path, depth: int = 2) -> list[Path]:
    """The run folders (holding a run.json) up to ``depth`` levels below the folder ``path``, sorted; ``[]`` for a file."""
    if not path.is_dir():
        return []
    found, level = [], [path]
    for _ in range(depth):
        level = sorted(child for folder in level for child in _subfolders(folder))
        found += [folder for folder in level if (folder / "run.json").is_file()]
        level = [folder for folder in level if not (folder / "run.json").is_file()][:1000]
    return sorted(found)


def _subfolders(folder: Path) -> list[Path]:
    try:
        return [child for child in folder.iterdir() if child.is_dir() and not child.name.startswith(".")]
    except OSError:
        return []


def _lock_dir(path: Path) -> Path:
    """The directory whose lock covers ``path``: a run's ``.previous/`` is its run directory's."""
    from isotropy.experiments._results_dir import PREVIOUS_NAME

    return path.parent if path.name == PREVIOUS_NAME else path


def _run_dir_of(folder: Path) -> Path | None:
    """The run directory ``folder`` is or lies in (resolved; it holds a run.json or a run's lock); None if none."""
    from isotropy.experiments._results_dir import LOCK_NAME

    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / "run.json").is_file() or (candidate / LOCK_NAME).is_file():
            return candidate
    return None


def _inside(child: Path, parent: Path) -> bool:
    child, parent = child.resolve(), parent.resolve()
    return child == parent or parent in child.parents


def _run_without_record(path: Path) -> str | None:
    """One line for a run directory with no run.json: a run that is starting (its lock held), or one killed after it
    had moved the previous results into ``.previous/`` and before it wrote its run.json; None for anything else."""
    from isotropy.experiments._results_dir import PREVIOUS_NAME, holder_kind, lock_holder

    previous = path / PREVIOUS_NAME
    if not path.is_dir() or not (previous / "run.json").is_file():
        return None
    aside = f"The previous run's results are in {str(previous)!r}"
    holder = lock_holder(path)
    if holder is not None:
        return (f"{str(path)!r} is in use by {holder_kind(path)} ({holder}), which has no results to plot yet; plot it "
                f"once it has finished. {aside} until it writes its first result.")
    return (f"The run in {str(path)!r} was interrupted before it wrote its run.json and has no results to plot. "
            f"{aside}; the next 'isotropy run' there (with --resume or without) puts them back before it starts.")


def _unfinished_run(path: Path, record, *, locking: bool) -> str | None:
    """One line saying why the run in ``path`` has no results to plot (running, failed, interrupted); None if it has.

    From run.json's status and the directory's lock: "running" with no process holding the lock is a
    run that was killed. Results a killed run had moved aside are in ``.previous/``: the line says so.
    The lock is looked at only where it tells something: a run that says "running", or a plot that
    will take the lock itself (``locking``); ``--out`` elsewhere reads a finished run's directory as
    it is, also when it is read-only. A run's ``.previous/`` holds an earlier run, never a running one:
    the lock of the directory above it is the new run's (the plot's own :class:`ResultsLock` names it).
    """
    from isotropy.experiments._results_dir import PREVIOUS_NAME, lock_holder

    status = record.get("status") if isinstance(record, dict) else None
    own = _lock_dir(path) == path  # not a .previous/
    holder = lock_holder(path) if own and (locking or status == "running") else None
    where = f"the run in {str(path)!r}"
    previous = path / PREVIOUS_NAME
    kept = previous.is_dir() and any(p.name != ".kept.json" for p in previous.iterdir())  # killed before a result
    if holder is not None:
        from isotropy.experiments._results_dir import holder_kind

        kind = holder_kind(path)  # a plot drawing into it is not a run
        line = (f"{where} is running ({holder}); plot it once it has finished." if kind == "another run" else
                f"{str(path)!r} is in use by {kind} ({holder}); plot it once that has finished.")
        if kept:
            line += f" The previous run's results are in {str(previous)!r} until it writes its first result."
        return line
    if status == "running":
        line = f"{where} was interrupted (run.json says 'running' but no process holds the directory)"
    elif status == "interrupted":
        by = record.get("stopped_by")  # (runs written before it was recorded: which one is not known)
        line = f"{where} was interrupted ({by if by in ('Ctrl-C', 'SIGTERM') else 'Ctrl-C or SIGTERM'} before it " \
               f"finished)"
    elif status == "failed":
        error = " ".join(str(record.get("error") or "no error recorded").split())
        line = f"{where} failed ({error if len(error) <= 200 else error[:199] + '…'})"
    else:
        return None
    if kept:
        return (f"{line} and has no results to plot. The previous run's results are in {str(previous)!r}; the next "
                f"'isotropy run' there puts them back before it starts.")
    return f"{line} and has no results to plot; run it again (with --resume to keep its finished parts)."


def _terminate(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Handle SIGTERM as Ctrl-C while the command runs; only where nobody else handles it (the default handler, the
    main thread), and the handler before it is put back."""
    try:
        previous = signal.getsignal(signal.SIGTERM)
        installed = previous == signal.SIG_DFL and threading.current_thread() is threading.main_thread()
        if installed:
            signal.signal(signal.SIGTERM, _terminate)
    except (ValueError, OSError, AttributeError):  # no SIGTERM on this platform, or not settable here
        installed = False
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, previous)


def main(argv=None):
    """Console entry point.

    User errors (bad values, missing or unreadable files, missing optional packages) are printed
    as one line ``Error: ...`` with exit status 2 and no traceback; set ``ISOTROPY_DEBUG=1`` to
    see the traceback (of every subcommand's error, with the exception a one-line error was made
    from). Ctrl-C exits with status 130 (``Interrupted.``); SIGTERM is handled as Ctrl-C (a run
    records that it was interrupted, or puts the previous results back) and exits with status 143
    (``Terminated.``).
    """
    from isotropy._utils.signals import interrupts_outside_gc

    try:
        # Ctrl-C and SIGTERM that land inside a garbage-collector callback (dask's) are delivered again after it, not lost
        with _sigterm_as_interrupt(), interrupts_outside_gc():
            cli.main(args=argv, prog_name="isotropy", standalone_mode=False)
    except (Terminated, click.exceptions.Abort) as exc:
        if not isinstance(exc, Terminated) and not isinstance(exc.__cause__, Terminated):  # click's Abort of a Ctrl-C
            click.echo("Interrupted.", err=True)
            sys.exit(130)
        click.echo("Terminated.", err=True)
        sys.exit(143)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:  # `isotropy`, `isotropy run`: the help itself, as --help lays it out
        click.echo(exc.ctx.get_help(), err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except (click.ClickException, ValueError, OSError, ImportError) as exc:
        if debugging():
            # the one-line errors are often made from another exception ("raise InputError(...) from None"): its
            # traceback is the one that tells where the error arose, so it is shown too
            exc.__suppress_context__ = False
            raise
        if isinstance(exc, click.UsageError):  # one line, as every other refusal: the usage block is one --help away
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            click.echo(f"Error: {' '.join(exc.format_message().split())}{hint}", err=True)
            sys.exit(exc.exit_code)
        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        from isotropy._utils.install import import_error_message

        click.echo(f"Error: {import_error_message(exc)}", err=True)
        sys.exit(2)
