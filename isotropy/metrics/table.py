"""The metric table: every metric of the toolkit once, under one name, and the name checks that read it.

Each row (:class:`MetricSpec`) gives a metric's canonical name, which is the name of its function on
the package face (``isotropy.isoscore``, ``isotropy.silhouette_score``, ...), its family, whether it
needs cluster labels, the short name shown in printed tables and the name of its torchmetrics class in
:mod:`isotropy.training.metrics`, if it has one. Every place that takes metric names reads this
table: ``isotropy measure --metrics`` and the keys of its JSON, ``isotropy measure --model``, the
training probe and callbacks (``geometry/<name>/layer_<i>``) and the torchmetrics classes. An unknown
name, old or misspelt, is refused in one line with a suggestion (:func:`check_metric_names`).

Kept light at import (``isotropy --help`` reads it): the standard library only; a row's function is
imported when :attr:`MetricSpec.function` is first read.

Examples
--------
>>> from isotropy.metrics.table import METRICS, metric_names
>>> METRICS["cosine_similarity_mean"].display_name, METRICS["cosine_similarity_mean"].torchmetric
('mean cos', 'MeanCosine')
>>> metric_names(family="clusters")
['silhouette_score', 'calinski_harabasz_score', 'davies_bouldin_score', 'dunn_index']
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass

from isotropy._utils.errors import IsotropyValueError
from isotropy._utils.warn import TRACKS_NORMS  # (here too: the table's warnings say it)

__all__ = ["FAMILIES", "ISOSCORE_STAR_NOTE", "ISOSCORE_STAR_WARNING", "LEFT_OUT", "METRICS", "MetricSpec",
           "check_metric_names", "default_metric_names", "metric_names", "span_bound_warning", "suggest_name",
           "warn_span_bound"]

FAMILIES = ("covariance", "neighbours", "pairs", "clusters")


@dataclass(frozen=True)
class MetricSpec:
    """One row of the metric table.

    Attributes
    ----------
    name : str
        Canonical name: the function's name on the package face, the ``--metrics`` name, the JSON key
        and the ``<metric>`` of the training callbacks' keys.
    module : str
        The module that defines the function.
    family : {"covariance", "neighbours", "pairs", "clusters"}
        ``"covariance"``: a function of the count, mean and centred scatter or of the unit-vector
        sums (streams exactly, O(n·d²)); ``"neighbours"``: of the nearest-neighbour distances
        (O(n²)); ``"pairs"``: of every pairwise distance (O(n²), not streamable); ``"clusters"``: of
        the rows and their cluster labels.
    needs_labels : bool
        Called as ``function(X, labels)`` rather than ``function(X)``.
    display_name : str
        Short name for table headers and figure titles (``"IsoScore*"``, ``"I(W)"``).
    torchmetric : str or None
        Name of the torchmetrics class in :mod:`isotropy.training.metrics`, ``None`` when there is none.
    pairwise : bool
        Compares all n² pairs of rows (the cost note of ``isotropy measure`` is shown for these).
    default : bool
        Measured when no metric is named (``isotropy measure`` without ``--metrics``). ``False`` for
        the metrics added beyond the four papers (``effective_rank``, ``rankme``, ``uniformity``),
        which are measured on request. ``isoscore_star`` is in the default table only with a
        shrinkage sample (see :data:`ISOSCORE_STAR_NOTE`).
    """

    name: str
    module: str
    family: str
    needs_labels: bool
    display_name: str
    torchmetric: str | None = None
    pairwise: bool = False
    default: bool = True

    @property
    def function(self):
        """The metric's function (imported on first use)."""
        return getattr(importlib.import_module(self.module), self.name)


_ROWS = (
    MetricSpec("isoscore", "isotropy.metrics.isoscore", "covariance", False, "IsoScore", "IsoScore"),
    MetricSpec("isoscore_star", "isotropy.metrics.isoscore", "covariance", False, "IsoScore*", "IsoScoreStar"),
    MetricSpec("partition_isotropy", "isotropy.metrics.partition", "covariance", False, "I(W)"),
    MetricSpec("cosine_similarity_mean", "isotropy.metrics.cosine", "covariance", False, "mean cos", "MeanCosine"),
    MetricSpec("participation_ratio", "isotropy.metrics.covariance", "covariance", False, "PR", "ParticipationRatio"),
    MetricSpec("rogue_dimension_share", "isotropy.metrics.rogue", "covariance", False, "rogue share",
               "RogueDimensionShare"),
    MetricSpec("twonn_dimension", "isotropy.metrics.dimension", "neighbours", False, "TwoNN", "TwoNNDimension",
               pairwise=True),
    MetricSpec("mle_dimension", "isotropy.metrics.dimension", "neighbours", False, "MLE", pairwise=True),
    MetricSpec("silhouette_score", "isotropy.metrics.silhouette", "clusters", True, "silhouette", pairwise=True),
    MetricSpec("calinski_harabasz_score", "isotropy.metrics.cluster_indices", "clusters", True, "CH"),
    MetricSpec("davies_bouldin_score", "isotropy.metrics.cluster_indices", "clusters", True, "DB"),
    MetricSpec("dunn_index", "isotropy.metrics.cluster_indices", "clusters", True, "Dunn", pairwise=True),
    # beyond the four papers: measured on request, not in the default tables
    MetricSpec("effective_rank", "isotropy.metrics.spectrum", "covariance", False, "erank", "EffectiveRank",
               default=False),
    MetricSpec("rankme", "isotropy.metrics.spectrum", "covariance", False, "RankMe", "RankMe", default=False),
    MetricSpec("uniformity", "isotropy.metrics.contrastive", "pairs", False, "uniformity", pairwise=True,
               default=False),
)

#: Metrics of the package face that are not rows of the table, with the reason (shown when one is asked for).
LEFT_OUT = {
    "alignment": "alignment compares the two sides of positive pairs, alignment(X, Y): it is not a function of "
                 "one embedding matrix, which is what every user of this table measures; call "
                 "isotropy.alignment(X, Y) on the paired rows",
}

#: The one-line note of a default table that leaves IsoScore* out (no shrinkage sample given).
#: Short: a default table prints it on every run (ISOSCORE_STAR_WARNING and the docs hold the numbers behind it).
ISOSCORE_STAR_NOTE = ("isoscore_star left out: without a shrinkage sample (its Σ_S) it tracks the vector norms, not "
                      "isotropy; give one to measure it")

#: The warning when IsoScore* is asked for by name without a shrinkage sample.
ISOSCORE_STAR_WARNING = ("isoscore_star without a shrinkage sample shrinks toward the identity (Σ_S = I): "
                         f"{TRACKS_NORMS}; give a shrinkage sample")

def span_bound_warning(name: str, n_samples: int, n_features: int) -> str | None:
    """The warning of a covariance metric whose range the rows themselves cap: ``n_samples <= n_features``.

    ``n`` centred rows span at most ``n − 1`` dimensions, so the covariance has at most ``n − 1`` non-zero
    eigenvalues: the participation ratio (Σλ)²/Σλ² is at most ``n − 1`` and IsoScore = (PR − 1)/(d − 1) at most
    ``(n − 2)/(d − 1)``, reached by ``n`` equidistant points (a regular simplex), whatever the space they come
    from. 40 sentence vectors of a 384-d model read IsoScore 0.09 as "anisotropic" where nothing larger was
    possible (a user trial).

    Parameters
    ----------
    name : str
        A metric's canonical name; only ``"isoscore"`` and ``"participation_ratio"`` have such a bound.
    n_samples, n_features : int
        The rows measured and their width.

    Returns
    -------
    str or None
        The warning, naming the bound; ``None`` for the other metrics, and for more rows than features.

    Examples
    --------
    >>> span_bound_warning("isoscore", 40, 384)[:70]
    '40 rows in 384 features span at most 39 dimensions, so the value is at'
    >>> span_bound_warning("isoscore", 400, 384) is None
    True
    """
    if n_samples > n_features or n_samples < 2 or name not in ("isoscore", "participation_ratio"):
        return None
    span = n_samples - 1
    value = f"is at most {(span - 1) / (n_features - 1):.3g}" if name == "isoscore" else f"is at most {span}"
    return (f"{n_samples} rows in {n_features} features span at most {span} dimension{'s' if span != 1 else ''}, so "
            f"the value {value} on any "
            f"such rows (a regular simplex reaches it); measure more rows than features to compare spaces by it.")


def shrinkage_span_warning(n_samples: int, n_features: int) -> str | None:
    """The warning of a shrinkage sample of IsoScore* (Σ_S) of ``n_samples <= n_features`` rows; ``None`` otherwise.

    Σ_S stabilises IsoScore* on few points by the covariance of a larger sample (Rudman & Eickhoff): ``n`` rows
    span at most ``n − 1`` dimensions, so a Σ_S of as few rows as features is singular and shrinks the covariance
    toward that span only (5 rows of 64 features: a rank of at most 4). A trial's ``--shrinkage-sample 5`` was taken
    without a word.

    Examples
    --------
    >>> shrinkage_span_warning(5, 64)[:63]
    'the shrinkage sample of 5 rows in 64 features spans at most 4 d'
    >>> shrinkage_span_warning(65, 64) is None
    True
    """
    if n_samples > n_features or n_samples < 2:
        return None
    span = n_samples - 1
    return (f"the shrinkage sample of {n_samples} rows in {n_features} features spans at most {span} "
            f"dimension{'s' if span != 1 else ''}, so Σ_S is singular and shrinks the covariance toward that span only; "
            f"draw more rows than features (at least {n_features + 1}) for the larger sample Σ_S stands for")


def warn_span_bound(name: str, n_samples, n_features) -> None:
    """Warn (:class:`~isotropy._utils.warn.SpanBoundWarning`, at the user's line) when :func:`span_bound_warning`
    has a warning for ``name`` on ``n_samples`` x ``n_features`` rows (``n_samples`` unknown, NaN, on a dask array
    of unknown chunks: nothing said)."""
    import math
    import warnings

    from isotropy._utils.warn import SpanBoundWarning, user_stacklevel

    if not isinstance(n_samples, int) and (n_samples is None or not math.isfinite(n_samples)):
        return
    text = span_bound_warning(name, int(n_samples), int(n_features))
    if text is not None:
        warnings.warn(f"{name}: {text}", SpanBoundWarning, stacklevel=user_stacklevel())


#: Canonical name -> :class:`MetricSpec`, in the order tables print them. Read it, do not change it (the tests
#: register a fake metric here for the duration of one test).
METRICS = {row.name: row for row in _ROWS}

# Names used before the one table (0.1), so that a user who types one is told the new name.
_RENAMED = {
    "mean_cosine": "cosine_similarity_mean",
    "rogue_share": "rogue_dimension_share",
    "twonn": "twonn_dimension",
    "mle": "mle_dimension",
    "silhouette": "silhouette_score",
    "calinski_harabasz": "calinski_harabasz_score",
    "davies_bouldin": "davies_bouldin_score",
    "dunn": "dunn_index",
}


def metric_names(*, family: str | None = None, needs_labels: bool | None = None,
                 torchmetric: bool | None = None) -> list[str]:
    """Canonical names of the table's rows, in table order, optionally filtered.

    Parameters
    ----------
    family : {"covariance", "neighbours", "clusters"}, optional
    needs_labels : bool, optional
    torchmetric : bool, optional
        ``True``: only the metrics with a torchmetrics class; ``False``: only those without.

    Returns
    -------
    list of str
    """
    return [row.name for row in METRICS.values()
            if (family is None or row.family == family)
            and (needs_labels is None or row.needs_labels == needs_labels)
            and (torchmetric is None or (row.torchmetric is not None) == torchmetric)]


def default_metric_names(*, labels: bool, shrinkage: bool) -> list[str]:
    """The metrics of ``isotropy measure``'s default table, in table order.

    Every row with ``default=True``, the cluster metrics only when ``labels``, and
    ``isoscore_star`` only when ``shrinkage`` (a shrinkage sample was given: without one it
    tracks vector norms, see :data:`ISOSCORE_STAR_NOTE`).

    Examples
    --------
    >>> "isoscore_star" in default_metric_names(labels=False, shrinkage=False)
    False
    >>> "isoscore_star" in default_metric_names(labels=False, shrinkage=True)
    True
    """
    return [row.name for row in METRICS.values()
            if row.default and (labels or not row.needs_labels) and (shrinkage or row.name != "isoscore_star")]


def suggest_name(value, choices: Iterable[str], renamed=None) -> str:
    """``" Did you mean 'x'?"`` for a refused name, or ``""``: its new name if it was renamed, else the closest choice.

    ``renamed`` maps names used before 0.2 to their replacement (default: the metric renames); the
    closest choice comes from :func:`isotropy._utils.suggest.did_you_mean` (:mod:`difflib`). The
    one helper behind the did-you-mean of metric and pooling names.

    Examples
    --------
    >>> suggest_name("isoscor", ["isoscore", "isoscore_star"])
    " Did you mean 'isoscore'?"
    >>> suggest_name("cls", ["mean", "last", "first"], renamed={"cls": "first"})
    " Did you mean 'first'?"
    """
    from isotropy._utils.suggest import did_you_mean

    choices = list(choices)
    target = (_RENAMED if renamed is None else renamed).get(value) if isinstance(value, str) else None
    if target in choices:
        return f" Did you mean {target!r}?"
    if renamed is None and isinstance(value, str) and _plain(value):
        # a metric's header in the tables (PR, I(W), erank) or its class name (ParticipationRatio): --metrics I_W got
        # no suggestion, a trial; as written first: IsoScore* is isoscore_star's, whose letters are IsoScore's
        for same in (str.lower, _plain):
            for spec in _ROWS:
                known = {same(spec.display_name), same(spec.torchmetric or "")} - {""}
                if spec.name in choices and same(value) in known:
                    return f" Did you mean {spec.name!r}?"
    return did_you_mean(value, choices)


def _plain(text: str) -> str:
    """``text`` lower-cased with only its letters and digits: ``I(W)``, ``i_w`` and ``IW`` alike."""
    return "".join(c for c in text.lower() if c.isalnum())


def check_metric_names(names, *, caller: str, name: str = "metrics", allowed: Iterable[str] | None = None) -> list[str]:
    """Validate metric names against the table; return them in the order given, without repeats.

    Parameters
    ----------
    names : str or iterable of str
        One name or several (a comma-separated string is *not* split here).
    caller : str
        The function, class or command named in the message.
    name : str, default="metrics"
        The argument named in the message.
    allowed : iterable of str, optional
        A subset of the table's names accepted here (e.g. those with a torchmetrics class); default:
        every name in the table.

    Returns
    -------
    list of str

    Raises
    ------
    IsotropyValueError
        One line naming the argument, the value and the accepted names, with the closest accepted name
        (:func:`suggest_name`: the new name of an old one, else the closest by :mod:`difflib`), e.g.
        ``The 'metrics' parameter of HFGeometryCallback must name metrics of [...]. Got 'mean_cosine'
        instead. Did you mean 'cosine_similarity_mean'?``

    Examples
    --------
    >>> check_metric_names(["isoscore", "twonn_dimension", "isoscore"], caller="example")
    ['isoscore', 'twonn_dimension']
    """
    accepted = list(METRICS) if allowed is None else list(allowed)
    given = [names] if isinstance(names, str) else list(names)
    if not given:
        raise IsotropyValueError(f"The {name!r} parameter of {caller} must name at least one metric of {accepted}. "
                                 f"Got an empty list instead.")
    for value in given:
        if value not in accepted:
            if value in LEFT_OUT:
                raise IsotropyValueError(f"The {name!r} parameter of {caller} must name metrics of {accepted}. "
                                         f"Got {value!r} instead: {LEFT_OUT[value]}.")
            hint = suggest_name(value, accepted)
            # a metric of the table that this caller does not take ("Got 'silhouette_score' here instead" read oddly)
            where = f": a metric of the toolkit, but not one {caller} takes" if value in METRICS else ""
            raise IsotropyValueError(f"The {name!r} parameter of {caller} must name metrics of {accepted}. "
                                     f"Got {value!r} instead{where}.{hint}")
    return list(dict.fromkeys(given))
