"""The experiment to copy: a small, complete experiment on the contract of :mod:`isotropy.experiments._runner`.

To write another experiment: copy this folder to ``isotropy/experiments/<your_name>/``, copy
``isotropy/configs/_template/default.yaml`` to ``isotropy/configs/<your-name>/default.yaml``,
and keep the shape:

- ``config.py``: the config model (the one place of the schema);
- ``run.py``: ``prepare(config, ctx)`` (load; write nothing; the runner stores it as
  ``ctx.prepared``) and ``run(config, results_dir, ctx)`` (compute and write numbers; never plot);
- ``plot.py``: ``plot_results(results_dir)`` (matplotlib Figures keyed by their path);
- ``experiment.py``: the ``EXPERIMENT`` record, which names the package and binds the rest by
  module name (no wrappers);

then register it with one line in ``isotropy.experiments._registry.EXPERIMENTS``. Every flag, the config merge, locking, resuming, ``run.json`` and
``isotropy plot`` then come with it. ``tests/test_runner.py`` and ``tests/test_experiment_template.py`` run this template end to end.

The science here is deliberately small: IsoScore of Gaussian samples whose covariance has a
geometric spectrum ``1, decay, decay², ...``, for growing sample sizes (how many samples a
stable IsoScore needs), one part file per seed.
"""
