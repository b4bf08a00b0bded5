"""Geometry inside the training loops people use (optional extra ``isotropy[train]``).

- torchmetrics metrics, exact over batches, ``merge_state`` and DDP: :class:`IsoScore`,
  :class:`IsoScoreStar`, :class:`ParticipationRatio`, :class:`EffectiveRank`, :class:`RankMe`, :class:`MeanCosine`, :class:`RogueDimensionShare`,
  :class:`TwoNNDimension` (their names, as logged by the callbacks, are in :mod:`isotropy.metrics.table`);
- callbacks that log per-layer geometry of a probe set through the trainer's own logging:
  :class:`HFGeometryCallback` (Hugging Face ``Trainer``) and :class:`LightningGeometryCallback`;
- regularisers as drop-ins: :class:`HFRegulariser` (the Trainer's ``compute_loss_func`` plus the
  callback that refreshes Σ_S) and :class:`LightningRegulariser`;
- the Rajaee & Pilehvar cluster transform inside a forward pass: :func:`in_batch_cluster_isotropy`,
  :class:`InBatchClusterIsotropy`.

Names are imported on first use: ``import isotropy.training`` imports neither torch nor
transformers nor lightning.
"""

from __future__ import annotations

from isotropy._utils.lazy import lazy_exports

_EXPORTS = {
    "EffectiveRank": "isotropy.training.metrics",
    "IsoScore": "isotropy.training.metrics",
    "IsoScoreStar": "isotropy.training.metrics",
    "MeanCosine": "isotropy.training.metrics",
    "ParticipationRatio": "isotropy.training.metrics",
    "RankMe": "isotropy.training.metrics",
    "RogueDimensionShare": "isotropy.training.metrics",
    "TwoNNDimension": "isotropy.training.metrics",
    "GeometryProbe": "isotropy.training.probe",
    "HFGeometryCallback": "isotropy.training.hf_callback",
    "LightningGeometryCallback": "isotropy.training.lightning_callback",
    "HiddenStateRegulariser": "isotropy.training.regularisers",
    "HFRegulariser": "isotropy.training.hf_regulariser",
    "LightningRegulariser": "isotropy.training.lightning_regulariser",
    "InBatchClusterIsotropy": "isotropy.training.cluster_transform",
    "in_batch_cluster_isotropy": "isotropy.training.cluster_transform",
}

__all__ = [  # noqa: RUF022 (grouped as in _EXPORTS)
    "EffectiveRank",
    "IsoScore",
    "IsoScoreStar",
    "MeanCosine",
    "ParticipationRatio",
    "RankMe",
    "RogueDimensionShare",
    "TwoNNDimension",
    "GeometryProbe",
    "HFGeometryCallback",
    "LightningGeometryCallback",
    "HiddenStateRegulariser",
    "HFRegulariser",
    "LightningRegulariser",
    "InBatchClusterIsotropy",
    "in_batch_cluster_isotropy",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
