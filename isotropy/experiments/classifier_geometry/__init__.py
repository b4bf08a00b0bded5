"""The classifier-geometry experiment of Mickus et al. (2024), *Isotropy, Clusters, and Classifiers*.

Embeddings (initialised from a frozen encoder) are optimised directly, together with a linear
classifier, on a classification task; after every update the IsoScore of the embeddings and
their silhouette with respect to the target labels are recorded. ``run(config)`` computes,
``plot_results(results_dir)`` draws, ``cli.command`` is ``isotropy run classifier-geometry``.
"""
