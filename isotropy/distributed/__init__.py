"""The metrics on dask arrays: exact values for embeddings that outgrow one machine.

Pass a row-chunked ``dask.array.Array`` of shape ``(n_samples, n_features)`` to the usual
functions (:func:`isotropy.isoscore`, :func:`isotropy.silhouette_score`, ...): they hand it over
to this package, which builds a dask graph and runs it on the active scheduler, a
``dask.distributed`` cluster when a ``Client`` is open. The values equal those of the in-memory
functions on the materialised array (to rounding: 1e-10 in float64), also near float64's and float32's
limits: the scale-invariant metrics bring every block to the unit scale of the whole array by a power of
two (exact), as the in-memory functions rescale the materialised array.

- covariance family (IsoScore, IsoScore*, participation ratio, I(W)): per-chunk
  :class:`isotropy.CovarianceAccumulator` statistics merged by a tree reduction; mean cosine:
  per-chunk sums of the unit rows;
- silhouette and Dunn: the distance matrix as tiles (I, J ≥ I) of row blocks, each returning
  per-cluster distance sums (or extreme pairs) for its rows, never an n×n array;
  Calinski-Harabasz and Davies-Bouldin: per-chunk centroid statistics, two passes;
- exact k-NN as tiles with a top-k merge per row block, and TwoNN / MLE / local MLE on it (all three from one
  pass of tiles with :func:`neighbour_dimensions`);
- uniformity: the same tiles, each returning shifted sums of exponentials (and of their expm1) and its pair
  count, merged by a tree reduction, the log (log1p near 1) taken at the end;
- per-type cosines, rogue-dimension share, token norms: per-chunk sums of (unit) rows per type or per
  column, or the rows' norms (:mod:`._rows`).

Per-sample results (:func:`silhouette_samples`, :func:`local_mle_dimension`, :func:`kneighbors`)
come back as dask arrays chunked like X's rows (``X.chunks[0]``), whose tiles run when they are
computed (:func:`local_mle_dimension` first runs, when called, one pass over the chunks that finds
duplicate rows); scores as Python floats. Nothing here imports dask until called.
"""

from __future__ import annotations

from isotropy.distributed._clusters import (
    calinski_harabasz_score,
    davies_bouldin_score,
    dunn_index,
    silhouette_samples,
    silhouette_score,
)
from isotropy.distributed._contrastive import uniformity
from isotropy.distributed._covariance import (
    cosine_similarity_mean,
    covariance_accumulator,
    isoscore,
    isoscore_star,
    participation_ratio,
    partition_isotropy,
)
from isotropy.distributed._graph import show_progress
from isotropy.distributed._neighbors import (
    kneighbors,
    local_mle_dimension,
    mle_dimension,
    neighbour_dimensions,
    twonn_dimension,
)

__all__ = [
    "calinski_harabasz_score",
    "cosine_similarity_mean",
    "covariance_accumulator",
    "davies_bouldin_score",
    "dunn_index",
    "isoscore",
    "isoscore_star",
    "kneighbors",
    "local_mle_dimension",
    "mle_dimension",
    "neighbour_dimensions",
    "participation_ratio",
    "partition_isotropy",
    "show_progress",
    "silhouette_samples",
    "silhouette_score",
    "twonn_dimension",
    "uniformity",
]
