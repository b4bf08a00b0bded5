"""Reproductions of the published experiments, all on one contract (:mod:`isotropy.experiments._runner`).

Downstream of the library: experiments import :mod:`isotropy`, never the reverse. Each
experiment is a subpackage whose ``experiment.py`` holds its config schema (a pydantic model) and
its :class:`~isotropy.experiments._runner.Experiment` record (``prepare``, ``run`` that never
plots, ``plot`` that returns Figures); its packaged setups live in
``isotropy/configs/<experiment>/<setup>.yaml``; :mod:`isotropy.cli` lists the records and one
factory builds every ``isotropy run`` command. ``_template/`` is the experiment to copy.
"""
