"""Reproductions of the published experiments, all on one contract (:mod:`isotropy.experiments._runner`).

Downstream of the library: experiments import :mod:`isotropy`, never the reverse. Each
experiment is a subpackage whose ``experiment.py`` holds its config schema (a pydantic model) and
its :class:`~isotropy.experiments._runner.Experiment` record (``prepare``, ``run`` that never
plots, ``plot`` that returns Figures); its packaged setups live in
``isotropy/configs/<experiment>/<setup>.yaml``; :mod:`isotropy.experiments._registry` lists the
records, one factory builds every ``isotropy run`` command, and :func:`run_experiment` runs one from
Python. ``_template/`` is the experiment to copy.
"""

from __future__ import annotations

__all__ = ["experiment_setups", "run_experiment"]


def experiment_setups() -> dict[str, list[str]]:
    """The experiments of ``isotropy run`` and the names of their packaged setups, the default one first.

    Examples
    --------
    >>> from isotropy.experiments import experiment_setups
    >>> experiment_setups()["classifier-geometry"][:2]
    ['demo', 'glue']
    """
    from isotropy.experiments._config import available_setups
    from isotropy.experiments._registry import EXPERIMENTS, load_experiment

    setups = {}
    for name in sorted(EXPERIMENTS):
        default = load_experiment(name).default_setup
        setups[name] = sorted(available_setups(name), key=lambda setup: setup != default)
    return setups


def run_experiment(name: str, setup: str | None = None, *, sets=(), seeds=None, results_dir=None, device="auto",
                   threads: int | None = None, resume: bool = False, data_dir=None, quiet: bool = False,
                   plot: bool = True, overwrite: bool = False, **overrides):
    """Run a reproduction from Python (a notebook, a script), as ``isotropy run NAME`` runs it.

    The same config, folder, lock, resume, records (``run.json``, ``config.yaml``, ``claims.json``) and
    figures as the command; the command's flags are keyword arguments.

    Parameters
    ----------
    name : str
        The experiment (:func:`experiment_setups` lists them), e.g. ``"classifier-geometry"``.
    setup : str or None, default=None
        A packaged setup's name, or the path of a YAML config (a run's saved ``config.yaml`` too);
        ``None``: the experiment's default setup.
    sets : iterable of str, default=()
        ``KEY=VALUE`` strings, as ``--set`` takes them (``"model=all-MiniLM-L6-v2"``, ``"tasks=[rte,cola]"``).
    seeds : iterable of int or None, default=None
        The seeds, as ``--seeds``.
    results_dir : path-like or None, default=None
        Where the run writes; ``None``: ``results/<experiment>/<setup>`` under the working directory
        (a run there of the same config is replaced, and said so; one of another config is refused unless
        ``overwrite``).
    device, threads, resume, data_dir, quiet, plot, overwrite
        As ``--device`` (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``), ``--threads``,
        ``--resume``, ``--data-dir``, ``--quiet``, the opposite of ``--no-plot``, and ``--overwrite``.
    **overrides
        Config keys with Python values (``updates=20``; nested keys as ``**{"istar.zeta": 0.5}``).

    Returns
    -------
    outcome : RunOutcome
        ``results`` (what the experiment's ``run`` returned; empty when a ``resume`` found it
        finished), ``results_dir``, ``figures`` (the paths written), ``report`` (the text the
        command prints) and ``skipped``.

    Raises
    ------
    ValueError
        An unknown experiment (with the closest name), setup or config key, or a value out of range,
        in one line as the command says it.

    Examples
    --------
    >>> import tempfile
    >>> from isotropy.experiments import run_experiment
    >>> outcome = run_experiment("classifier-geometry", "demo", seeds=[0], updates=4, n_items=300,
    ...                          results_dir=tempfile.mkdtemp(), device="cpu", threads=1, quiet=True,
    ...                          plot=False)
    >>> "| demo | 299 | 4 | 1 |" in outcome.report  # the command's table: setup, items, updates, seeds
    True
    >>> (outcome.results_dir / "claims.json").is_file()
    True
    """
    from isotropy.experiments._registry import load_experiment
    from isotropy.experiments._runner import execute

    experiment = load_experiment(name)
    if isinstance(sets, str):  # one KEY=VALUE string, not its characters
        sets = [sets]
    sets = list(sets)
    if seeds is not None:
        if isinstance(seeds, (int, str)):
            seeds = [seeds]
        if "seeds" in overrides:
            raise ValueError("run_experiment got seeds= and a 'seeds' keyword: give the seeds once.")
        overrides["seeds"] = list(seeds)
    # a key given twice: the command refuses it (--seeds with --set seeds=...), and sets= silently won here
    twice = sorted({str(item).partition("=")[0].strip() for item in sets} & set(overrides))
    if twice:
        raise ValueError(f"run_experiment got {', '.join(repr(key) for key in twice)} both in sets= and as "
                         f"{'seeds=' if twice == ['seeds'] and seeds is not None else 'a keyword'}: give each key once.")
    config = experiment.config(setup, sets=sets, **overrides)
    return execute(experiment, config, results_dir=results_dir, setup=setup or experiment.default_setup,
                   device=device, threads=threads, resume=resume, data_dir=data_dir, quiet=quiet, plot=plot,
                   overwrite=overwrite)
