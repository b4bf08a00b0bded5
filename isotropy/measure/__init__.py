"""``isotropy measure``: the command (:mod:`~isotropy.measure.command`), the shared report and input loader
(:mod:`~isotropy.measure.report`), the from-model path (:mod:`~isotropy.measure.from_model`) and the dask body
(:mod:`~isotropy.measure.distributed`)."""
