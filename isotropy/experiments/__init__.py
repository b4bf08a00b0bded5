"""Reproductions of the published experiments.

Downstream of the library: experiments import :mod:`isotropy`, never the reverse. Each
experiment is a subpackage with ``run(config) -> results``, ``plot(results_dir)`` and a thin
``cli.command`` registered in :mod:`isotropy.cli`; its default configs live in
``isotropy/configs/<experiment>/<setup>.yaml``.
"""
