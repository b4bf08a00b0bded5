"""Private array kernels: the streaming covariance accumulator and the covariance -> IsoScore math, the
blocked silhouette and cluster kernels, the exact neighbour search and the intrinsic-dimension tails, and the
O(n²) cost model. The public functions (:mod:`isotropy.metrics`) and the dask paths (:mod:`isotropy.distributed`)
both call them, so each formula exists once."""
