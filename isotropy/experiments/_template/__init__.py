"""The experiment to copy: a small, complete experiment on the contract of :mod:`isotropy.experiments._runner`.

To write a fifth experiment: copy this folder to ``isotropy/experiments/<your_name>/``, copy
``isotropy/configs/_template/default.yaml`` to ``isotropy/configs/<your-name>/default.yaml``,
replace the science in ``experiment.py`` (keep the shape: a config model, ``prepare``, ``run``,
``plot``, the ``EXPERIMENT`` record), and register it with one line in
``isotropy.cli.EXPERIMENTS``. Every flag, the config merge, locking, resuming, ``run.json`` and
``isotropy plot`` then come with it. ``tests/test_runner.py`` runs this template end to end.

The science here is deliberately small: IsoScore of Gaussian samples whose covariance has a
geometric spectrum ``1, decay, decay², ...``, for growing sample sizes (how many samples a
stable IsoScore needs), one part file per seed.
"""
