"""One click command factory: every ``isotropy run NAME`` gets the same flags (see :mod:`._runner`)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import click

from isotropy._utils.click_types import BoundedInt, NonEmpty
from isotropy.experiments._config import _shown, available_setups
from isotropy.experiments._context import max_threads

__all__ = ["BoundedInt", "make_command", "parse_formats"]


def _seeds(ctx, param, value):
    if value is None:
        return None
    items = [v.strip() for v in value.split(",")]
    try:  # a seed past 4,300 digits is int()'s ValueError too; one past MAX_SEED is refused by the config's 'seeds'
        seeds = [int(v) for v in items]
    except ValueError:
        seeds = None
    if not seeds or any(s < 0 for s in seeds):  # the value shortened: 5,000 digits were echoed whole
        raise click.BadParameter(f"expected comma-separated non-negative ints such as 0,1,2. Got {_shown(value)} "
                                 f"instead.")
    return seeds


def _once(then=None):
    """A callback for an option declared ``multiple=True`` that must be given at most once: a second ``--seeds 1``
    replaced ``--seeds 0`` without a word (click keeps the last); ``then`` checks the one value."""
    def callback(ctx, param, value):
        if len(value) > 1:
            flag = param.opts[0]
            shown = ", ".join(_shown(v, 60) for v in value)
            raise click.BadParameter(f"given {len(value)} times ({shown}); give it once"
                                     + (" (a list in one value: 0,1,2)" if flag in ("--seeds",) else "") + ".",
                                     ctx=ctx, param=param)
        one = value[0] if value else None
        return then(ctx, param, one) if then is not None else one

    return callback


def _one_setup(ctx, param, value):
    """One ``--setup``: a second one replaced the first without a word (its keys were dropped); setups are not merged,
    a partial YAML file already merges over the packaged defaults."""
    if len(value) > 1:
        shown = ", ".join(_shown(v, 200) for v in value)
        raise click.BadParameter(f"expected one setup (a packaged name or a YAML file). Got {len(value)}: {shown}; "
                                 f"put the keys of all of them into one YAML file, or give the others' keys with "
                                 f"--set KEY=VALUE.", param_hint="'--setup'")
    return value[0] if value else None


def _results_dir(ctx, param, value):
    """``--results-dir ''`` was Path('') == '.': the results went into the current directory, beside anything there."""
    if value is None:
        return None
    if not str(value).strip():
        raise click.BadParameter(f"expected a folder path. Got {value!r} (empty) instead.", param_hint="'--results-dir'")
    return Path(value)


def parse_formats(value: str) -> tuple[str, ...]:
    """``png,svg,pdf`` -> ``("png", "svg", "pdf")``; each must be a format matplotlib writes."""
    # each once, in the order given ("png,PNG,png" drew every figure three times)
    formats = tuple(dict.fromkeys(v.strip().lower() for v in str(value).split(",") if v.strip()))
    from isotropy._utils.click_types import FIGURE_FORMATS as allowed
    bad = [f for f in formats if f not in allowed]
    if not formats or bad:
        from isotropy._utils.suggest import did_you_mean

        close = did_you_mean(bad[0], allowed) if bad else ""
        raise click.BadParameter(f"expected a comma-separated list of {', '.join(allowed)}. Got {value!r} instead."
                                 f"{close}", param_hint="'--format'")
    return formats


def _shortcut_sets(experiment, given: dict) -> list[str]:
    """``--set`` strings from the shortcut flags.

    A key ending in ``[]`` turns ``a,b`` into ``[a, b]`` (items parsed as YAML); any other key is
    read like ``--set``: verbatim when its field is text (paths, model names: a ``#`` or ``: `` is
    kept), parsed as YAML otherwise (``16``, ``null``).
    """
    sets = []
    for flag, key, _ in experiment.shortcuts:
        value = given.get(_param_name(flag))
        if value is None:
            continue
        if key.endswith("[]"):
            items = [v.strip() for v in value.split(",")]
            if not all(items):  # '1,,2' was read as [1, 2], where --seeds 0,,1 is refused
                raise click.BadParameter(f"expected comma-separated values such as 1,2 with none empty. Got "
                                         f"{_shown(value)} instead.", param_hint=f"'{flag}'")
            sets.append(f"{key[:-2]}=[{', '.join(items)}]")
        else:
            sets.append(f"{key}={value}")
    return sets


def _refuse_twice_set(experiment, given: dict, seeds, sets) -> None:
    """Refuse a key set both by a flag (``--seeds``, a shortcut) and by ``--set``: one of them was silently dropped,
    and which one depended on the flag (``--seeds`` won over ``--set seeds=``, ``--set`` over ``--updates``)."""
    flags = {key.removesuffix("[]"): flag for flag, key, _ in experiment.shortcuts
             if given.get(_param_name(flag)) is not None}
    if seeds is not None:
        flags["seeds"] = "--seeds"
    for pair in sets:
        key = str(pair).partition("=")[0].strip()
        if key in flags:
            raise click.UsageError(f"{flags[key]} and --set {key}=... both set '{key}': give one of them.")


def _param_name(flag: str) -> str:
    return "shortcut_" + flag.lstrip("-").replace("-", "_")


def _one_line_warnings():
    """A ``showwarning`` that prints ``Warning: <message>`` on stderr, once per distinct message in a run.

    In place of the ``file:line: Category: message`` and source-line form. Once per message, not per
    call site: Python's own once-per-location memory is cleared whenever a filter changes, which every
    ``catch_warnings`` block inside the run does (clustering ignores scikit-learn's convergence
    warnings once per seed), so the same warning was printed once per seed.
    """
    printed = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = " ".join(str(message).split())
        if text not in printed:
            printed.add(text)
            click.echo(f"Warning: {text}", err=True)

    return show


def make_command(experiment) -> click.Command:
    """The ``isotropy run <experiment.name>`` click command."""
    setups = ", ".join(available_setups(experiment.name))

    def callback(setup, sets, print_config, seeds, device, threads, resume, results_dir, data_dir, no_plot, quiet,
                 overwrite, **shortcuts):
        from isotropy.experiments._config import dump_config
        from isotropy.experiments._runner import execute

        _refuse_twice_set(experiment, shortcuts, seeds, sets)
        if not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", str(device).strip()):  # before --print-config, which
            # prints a config without running it: a device name no run takes is refused there too (a machine's
            # lack of a GPU is not: the config may be meant for another machine)
            raise ValueError(f"--device must be auto, cpu, cuda, cuda:N or mps. Got {device!r} instead.")  # as a run
        all_sets = [*_shortcut_sets(experiment, shortcuts), *sets]
        if seeds is not None:
            all_sets.append(f"seeds=[{', '.join(map(str, seeds))}]")
        config = experiment.config(setup, sets=all_sets)
        if print_config:
            click.echo(dump_config(config.model_dump(mode="json"), experiment=experiment.name), nl=False)
            return
        with warnings.catch_warnings():  # a warning about the numbers is kept (also with --quiet), as one line, once
            warnings.showwarning = _one_line_warnings()
            outcome = execute(experiment, config, results_dir=results_dir, setup=setup or experiment.default_setup,
                              device=device, threads=threads,
                              resume=resume, data_dir=data_dir, quiet=quiet, plot=not no_plot, overwrite=overwrite)
        if not outcome.skipped:  # the report was written by the run, before run.json said finished
            click.echo(outcome.report, nl=False)
        for path in outcome.figures:
            click.echo(f"figure: {path}")
        click.echo(f"Results in {outcome.results_dir}/")

    params = [
        click.Option(["--setup"], multiple=True, callback=_one_setup, metavar="NAME|FILE.yaml",
                     help=f"Packaged setup ({setups}; default {experiment.default_setup}) or a YAML file "
                          f"(partial files merge over the default; one --setup per run)."),
        click.Option(["--set", "sets"], multiple=True, metavar="KEY=VALUE",
                     help="Override a config value (repeatable; dotted keys; YAML values, e.g. lr=1e-3, x=null)."),
        click.Option(["--print-config"], is_flag=True, help="Print the resolved config as YAML and exit."),
        click.Option(["--seeds"], multiple=True, callback=_once(_seeds), metavar="0,1,2",
                     help="Comma-separated seeds (the config's 'seeds')."),
        click.Option(["--device"], default="auto", show_default=True, metavar="auto|cpu|cuda[:N]|mps",
                     help="Torch device; auto = CUDA when torch sees one, else CPU."),
        click.Option(["--threads"], type=BoundedInt(min=1, max=max_threads()), default=None, metavar="N",
                     help="CPU threads for torch and BLAS during the run (restored after) [default: the libraries']."),
        click.Option(["--resume"], is_flag=True,
                     help="Keep the finished parts in --results-dir (same config) and run the rest."),
        click.Option(["--overwrite"], is_flag=True,
                     help="Replace a run of other settings in --results-dir (refused without it: its results would be "
                          "deleted)."),
        click.Option(["--results-dir"], type=click.STRING, callback=_results_dir, default=None, metavar="PATH",
                     help=f"Where results go [default: results/{experiment.name}/<setup>]."),
        click.Option(["--data-dir"], type=NonEmpty(click.Path(path_type=Path), expected="a folder path"), default=None,
                     help="Folder holding the data sets [default: $ISOTROPY_DATA, else ./data]."),
        click.Option(["--no-plot"], is_flag=True, help="Write no figures (redraw later with 'isotropy plot DIR')."),
        click.Option(["--quiet", "--no-progress", "quiet"], is_flag=True,
                     help="No progress bars or messages on stderr (warnings and errors still print); the results "
                          "table and paths are the command's output on stdout, as without it (--no-progress: the "
                          "same; 'isotropy measure --quiet' is this too)."),
    ]
    for flag, key, help_text in experiment.shortcuts:
        shown = key.removesuffix("[]")
        same = f"--set '{shown}=[a, b]'" if key.endswith("[]") else f"--set {shown}=..."  # --set takes YAML: a list
        # '' (an unset shell variable, "$DATA") became null, and the run then asked for the option it was given
        params.append(click.Option([flag, _param_name(flag)], multiple=True, callback=_once(), metavar="VALUE",
                                   type=NonEmpty(click.STRING, expected="a value"), help=f"{help_text} (same as {same})"))
    # keys with a flag of their own: an unknown option near one keeps click's "Did you mean '--seeds'?"
    flagged = {"seeds", *(key.removesuffix("[]") for _, key, _ in experiment.shortcuts)}
    keys = {key: is_list for key, is_list in _config_keys(experiment.config_model).items() if key not in flagged}
    return _ExperimentCommand(experiment.name, callback=callback, params=params, help=experiment.help,
                              short_help=experiment.help.split("\n")[0] if experiment.help else None,
                              config_keys=keys)


def _config_keys(model, prefix: str = "") -> dict[str, bool]:
    """Every key of the config model ``model``, nested ones dotted (``embeddings.model``), and whether it takes a list."""
    import typing

    from pydantic import BaseModel

    keys = {}
    for name, info in model.model_fields.items():
        keys[prefix + name] = typing.get_origin(info.annotation) is list
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            keys.update(_config_keys(info.annotation, f"{prefix}{name}."))
    return keys


class _ExperimentCommand(click.Command):
    """An ``isotropy run`` command whose unknown option that names a config key points at ``--set``.

    ``--batches 5`` got "Did you mean '--threads'?", an option of another meaning, where the config key is
    ``n_batches`` (a trial): an unknown ``--NAME`` whose name is a config key, ends one (``_NAME``) or is close to one
    is answered with that key's ``--set``, with the value given after it when there is one.
    """

    def __init__(self, *args, config_keys=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._config_keys = dict(config_keys or {})  # key: whether it takes a list

    def parse_args(self, ctx, args):
        given = list(args)  # (click's parser consumes the list it is given)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            key = self._key_for(exc.option_name)
            if key is None:
                raise
            name, value = exc.option_name.partition("=")[0], ""
            for at, word in enumerate(given):  # the value given with it: --batches 5, --batches=5
                if word.startswith(name + "="):
                    value = word[len(name) + 1:]
                elif word == name and at + 1 < len(given) and not given[at + 1].startswith("-"):
                    value = given[at + 1]
                if word == name or word.startswith(name + "="):
                    break
            value = value or "VALUE"
            if self._config_keys[key] and not value.startswith("["):  # a list's one value: --set key=[v] (YAML)
                value = f"[{value}]"
            raise click.NoSuchOption(name, message=f"No such option '{name}'; '{key}' is a config key: --set "
                                                   f"{key}={value}", ctx=ctx) from None

    def _key_for(self, option: str) -> str | None:
        import difflib

        name = option.partition("=")[0].lstrip("-").replace("-", "_").lower()
        if not name:
            return None
        for key in self._config_keys:
            leaf = key.rsplit(".", 1)[-1]
            if name in (key, leaf) or leaf.endswith("_" + name):
                return key
        close = difflib.get_close_matches(name, list(self._config_keys), n=1, cutoff=0.8)
        return close[0] if close else None

