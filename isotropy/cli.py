"""Command-line interface: ``isotropy measure``, ``isotropy run EXPERIMENT``, ``isotropy plot``.

Subcommands are imported only when invoked, so ``isotropy --help`` is fast. Errors in user
input are printed as one line (``Error: ...``) with exit status 2 and no traceback.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import click

# experiment name -> "module:attribute" of its click command
EXPERIMENTS = {
    "classifier-geometry": "isotropy.experiments.classifier_geometry.cli:command",
    "sts-isotropy": "isotropy.experiments.sts_isotropy.cli:command",
    "layer-geometry": "isotropy.experiments.layer_geometry.cli:command",
    "istar": "isotropy.experiments.istar.cli:command",
}
# experiment name -> "module:function" that redraws its figures from a results directory
PLOTTERS = {
    "classifier-geometry": "isotropy.experiments.classifier_geometry.plot:plot_results",
    "sts-isotropy": "isotropy.experiments.sts_isotropy.plot:plot_results",
    "layer-geometry": "isotropy.experiments.layer_geometry.plot:plot_results",
    "istar": "isotropy.experiments.istar.plot:plot_results",
}


def _load(target: str):
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


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


@click.group(cls=_LazyGroup, lazy={"measure": "isotropy.measure_cli:command"},
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="isotropy")
def cli():
    """Geometry of embedding spaces: isotropy, clusters and intrinsic dimension."""


@cli.group(cls=_LazyGroup, lazy=EXPERIMENTS)
def run():
    """Run a published experiment (one config file per setup; every value overridable)."""




@cli.command()
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
def plot(results_dir: Path):
    """Redraw the figures of RESULTS_DIR without re-running the experiment."""
    meta = results_dir / "run.json"
    if not meta.is_file():
        raise click.UsageError(f"RESULTS_DIR {str(results_dir)!r} has no run.json; expected the directory an "
                               f"'isotropy run' command wrote.")
    experiment = json.loads(meta.read_text()).get("experiment")
    if experiment not in PLOTTERS:
        raise click.UsageError(f"run.json in {str(results_dir)!r} names experiment {experiment!r}; "
                               f"expected one of {sorted(PLOTTERS)}.")
    for path in _load(PLOTTERS[experiment])(results_dir):
        click.echo(str(path))


def main(argv=None):
    """Console entry point.

    User errors (bad values, missing or unreadable files, missing optional packages) are printed
    as one line ``Error: ...`` with exit status 2 and no traceback; set ``ISOTROPY_DEBUG=1`` to
    see the traceback. Ctrl-C exits with status 130.
    """
    try:
        cli.main(args=argv, prog_name="isotropy", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except (ValueError, OSError, ImportError) as exc:
        if os.environ.get("ISOTROPY_DEBUG"):
            raise
        message = " ".join(str(exc).split()) or exc.__class__.__name__
        click.echo(f"Error: {message}", err=True)
        sys.exit(2)
