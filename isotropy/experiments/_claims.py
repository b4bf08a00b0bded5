"""Claims as data: each reproduced claim with its statistic, interval, decision rule and verdict.

An experiment's ``report`` turns its results into a list of :class:`Claim` records and writes them to
``claims.json`` beside the results (:func:`write_claims`). The verdict is never typed: it comes from
:func:`decide`, applying a :class:`Rule` written in the code to the per-seed values and to their
interval (the rules of the experiments reproduced so far were written after their first results were
seen: not pre-registered; docs/experiments/index.md says how to date each):

- ``holds`` when every per-seed value and both ends of the interval satisfy the rule;
- ``does not hold`` when every per-seed value and both ends of the interval violate it;
- ``not established`` otherwise, and always when the value depends on training or sampling randomness
  and fewer than :data:`MIN_SEEDS` seeds were run (a claim that was not run at all is ``not
  established`` too). Every ``not established`` record gives its reason in ``interval["how"]``:
  ``"not measured: ..."`` for a claim not run, else the interval's text followed by
  ``"; not established: <reason>"`` (e.g. ``"seed spread: min–max over 1 seed(s); not established:
  fewer than 3 seeds (1)"``); :func:`reason_of` reads it back.

A rule is a threshold on one number (``Rule("holds if ρ < −0.5 in every seed", below=-0.5)``), so
"both ends of the interval satisfy it" means the whole interval lies on one side of the threshold.
The interval is the seed spread (min–max of the per-seed values), a percentile bootstrap over the
evaluated items (per seed; the union over seeds when there are several), or both (the union of the
two). The docs tables are rendered from these files (:func:`markdown_table`, used by ``docs/_hooks.py``).
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from isotropy.experiments._files import read_json

__all__ = ["INTERVALS", "MIN_SEEDS", "VERDICTS", "Claim", "Rule", "bootstrap_interval", "claim", "command_of",
           "decide", "decide_why", "markdown_table", "not_run", "read_claims", "reason_of", "replicate_interval",
           "run_config", "seed_interval", "with_reason", "write_claims"]

VERDICTS = ("holds", "does not hold", "not established")
INTERVALS = ("seed spread", "bootstrap over items", "both")
MIN_SEEDS = 3  # a verdict on anything random needs at least this many seeds
REASON_MARK = "; not established: "  # what separates the interval's text from the reason in ``interval["how"]``
NOT_MEASURED = "not measured: "  # the start of ``interval["how"]`` for a claim that was not run


@dataclass(frozen=True)
class Claim:
    """One reproduced claim: what the paper says, what we measured, the rule and the verdict (``claims.json`` rows)."""

    id: str
    paper: str            # which paper and where: slide, figure or table
    claim: str            # one sentence
    paper_value: object   # a number or the paper's wording
    model: str
    statistic: str        # what ``ours`` measures
    ours: float | None
    interval: dict        # {"low": float | None, "high": float | None, "how": str}
    n_seeds: int
    rule: str             # the decision rule, fixed in the code
    verdict: str          # one of VERDICTS
    command: str          # the command that reproduces ``ours``

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Rule:
    """A decision rule on one number: holds when the value is ``below`` (or ``above``) a threshold.

    ``text`` is the rule as the docs print it ("holds if the accuracy change is above −1 point in every
    seed"); exactly one of ``below`` and ``above`` is given. ``random`` says whether the value depends
    on training or sampling randomness (then a verdict needs :data:`MIN_SEEDS` seeds).
    """

    text: str
    below: float | None = None
    above: float | None = None
    random: bool = True

    def __post_init__(self):
        if (self.below is None) == (self.above is None):
            raise ValueError("A Rule needs exactly one of 'below' and 'above'.")

    def satisfied(self, value: float) -> bool:
        """Whether ``value`` satisfies the rule (a NaN satisfies nothing)."""
        if value is None or not math.isfinite(value):
            return False
        return value < self.below if self.below is not None else value > self.above

    def violated(self, value: float) -> bool:
        """Whether ``value`` lies on the other side of the threshold (a NaN violates nothing)."""
        if value is None or not math.isfinite(value):
            return False
        return value >= self.below if self.below is not None else value <= self.above


def seed_interval(values: Sequence[float]) -> dict:
    """The seed spread: ``{"low": min, "high": max, "how": "seed spread: min–max over N seeds"}``."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("The 'values' parameter of seed_interval must be a non-empty sequence. Got [] instead.")
    return {"low": min(values), "high": max(values), "how": f"seed spread: min–max over {len(values)} seed(s)"}


def bootstrap_interval(items: Sequence, statistic: Callable, *, n_resamples: int = 2000, confidence: float = 0.95,
                       random_state: int = 0) -> dict:
    """Percentile bootstrap over the evaluated items, per seed; the union of the per-seed intervals.

    Parameters
    ----------
    items : sequence
        One entry per seed: an array of shape (n_items, ...) (or a tuple of such arrays, resampled
        with the same item indices: paired items).
    statistic : callable
        Maps one seed's (resampled) items to a float.
    n_resamples : int, default=2000
    confidence : float, default=0.95
    random_state : int, default=0

    Returns
    -------
    dict
        ``{"low", "high", "how"}``.
    """
    import numpy as np

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"The 'confidence' parameter of bootstrap_interval must be a float in the range (0, 1). "
                         f"Got {confidence!r} instead.")
    rng = np.random.default_rng(random_state)
    lows, highs = [], []
    for entry in items:
        arrays = entry if isinstance(entry, tuple) else (entry,)
        arrays = tuple(np.asarray(a) for a in arrays)
        n = len(arrays[0])
        stats = np.empty(n_resamples)
        for b in range(n_resamples):
            idx = rng.integers(0, n, size=n)
            picked = tuple(a[idx] for a in arrays)
            stats[b] = statistic(*picked)
        alpha = (1.0 - confidence) / 2.0
        lows.append(float(np.quantile(stats, alpha)))
        highs.append(float(np.quantile(stats, 1.0 - alpha)))
    how = (f"bootstrap over items: {100 * confidence:g} % percentile interval, {n_resamples} resamples"
           + (f", union over {len(lows)} seeds" if len(lows) > 1 else ""))
    return {"low": min(lows), "high": max(highs), "how": how}


def replicate_interval(replicates: Sequence[Sequence[float]], *, confidence: float = 0.95, paired: str = "") -> dict:
    """The percentile interval of bootstrap replicates computed beforehand, per seed; the union of the per-seed intervals.

    For statistics whose resamples are drawn where the data are (a run's validation representations): one entry
    per seed, the statistic on each resample of the items (``None`` where it could not be formed; left out).
    ``paired`` says how the replicates pair two runs, in the interval's text.
    """
    import numpy as np

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"The 'confidence' parameter of replicate_interval must be a float in the range (0, 1). "
                         f"Got {confidence!r} instead.")
    alpha = (1.0 - confidence) / 2.0
    lows, highs, counts = [], [], []
    for entry in replicates:
        values = np.asarray([v for v in entry if v is not None], dtype=np.float64)
        if not values.size:
            raise ValueError("The 'replicates' parameter of replicate_interval must hold a number for every seed. "
                             "Got a seed with none instead.")
        lows.append(float(np.quantile(values, alpha)))
        highs.append(float(np.quantile(values, 1.0 - alpha)))
        counts.append(values.size)
    resamples = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
    how = (f"bootstrap over items: {100 * confidence:g} % percentile interval, {resamples} resamples"
           + (f" ({paired})" if paired else "") + (f", union over {len(lows)} seeds" if len(lows) > 1 else ""))
    return {"low": min(lows), "high": max(highs), "how": how}


def _union(a: dict, b: dict) -> dict:
    return {"low": min(a["low"], b["low"]), "high": max(a["high"], b["high"]), "how": f"both: {a['how']}; {b['how']}"}


def decide_why(values: Sequence[float], rule: Rule, interval: dict | None) -> tuple[str, str | None]:
    """The verdict of ``rule`` on the per-seed ``values`` and their ``interval``, and why when ``not established``.

    Returns ``(verdict, reason)``; ``reason`` is ``None`` for ``holds`` and ``does not hold``.
    """
    values = [float(v) for v in values]
    if not values:
        return "not established", "no per-seed value"
    if interval is None or interval.get("low") is None or interval.get("high") is None:
        return "not established", "no interval"
    if rule.random and len(values) < MIN_SEEDS:
        return "not established", f"fewer than {MIN_SEEDS} seeds ({len(values)})"
    ends = (float(interval["low"]), float(interval["high"]))
    if not all(math.isfinite(v) for v in (*values, *ends)):
        return "not established", "a per-seed value or an end of the interval is not a finite number"
    if all(rule.satisfied(v) for v in (*values, *ends)):
        return "holds", None
    if all(rule.violated(v) for v in (*values, *ends)):
        return "does not hold", None
    threshold = rule.below if rule.below is not None else rule.above
    return "not established", (f"the per-seed values and the interval [{ends[0]:.4g}, {ends[1]:.4g}] lie on both "
                               f"sides of the threshold {threshold:g}")


def decide(values: Sequence[float], rule: Rule, interval: dict | None) -> str:
    """The verdict of ``rule`` on the per-seed ``values`` and their ``interval`` (see the module docstring)."""
    return decide_why(values, rule, interval)[0]


def with_reason(interval: dict, reason: str | None) -> dict:
    """``interval`` with ``reason`` appended to its ``how`` (``"...; not established: <reason>"``); as is for ``None``."""
    if reason is None:
        return interval
    return {**interval, "how": f"{interval.get('how', '')}{REASON_MARK}{reason}"}


def reason_of(record: dict) -> str | None:
    """Why a ``claims.json`` record is ``not established`` (from ``interval["how"]``); ``None`` when none is given."""
    how = str((record.get("interval") or {}).get("how") or "")
    if how.startswith(NOT_MEASURED):
        return how[len(NOT_MEASURED):]
    return how.split(REASON_MARK, 1)[1] if REASON_MARK in how else None


def claim(*, id: str, paper: str, claim: str, paper_value, model: str, statistic: str, values: Sequence[float],
          rule: Rule, command: str, interval: str = "seed spread", items: Sequence | None = None,
          item_statistic: Callable | None = None, ours: float | None = None,
          replicates: Sequence[Sequence[float]] | None = None, paired: str = "") -> Claim:
    """A :class:`Claim` from the per-seed ``values``: ``ours`` (their mean unless given), interval and verdict.

    ``interval`` is one of :data:`INTERVALS`; the bootstrap needs ``items`` (one entry per seed) and
    ``item_statistic``, or the statistic's ``replicates`` on resamples drawn beforehand (one entry per seed,
    :func:`replicate_interval`; ``paired`` says how they pair two runs). A value that depends on no randomness
    (``rule.random`` false) may have one seed; its seed spread is then the value itself.
    """
    if interval not in INTERVALS:
        raise ValueError(f"The 'interval' parameter of claim must be one of {list(INTERVALS)}. Got {interval!r} instead.")
    values = [float(v) for v in values]
    if not values:
        raise ValueError("The 'values' parameter of claim must be a non-empty sequence. Got [] instead.")
    span = seed_interval(values)
    if interval != "seed spread":
        if replicates is not None:
            boot = replicate_interval(replicates, paired=paired)
        elif items is None or item_statistic is None:
            raise ValueError(f"The interval {interval!r} needs 'items' and 'item_statistic', or 'replicates'.")
        else:
            boot = bootstrap_interval(items, item_statistic)
        span = boot if interval == "bootstrap over items" else _union(span, boot)
    mean = sum(values) / len(values) if ours is None else float(ours)
    verdict, reason = decide_why(values, rule, span)
    span = with_reason(span, reason)
    return Claim(id=id, paper=paper, claim=claim, paper_value=paper_value, model=model, statistic=statistic,
                 ours=mean, interval=span, n_seeds=len(values), rule=rule.text, verdict=verdict, command=command)


def not_run(*, id: str, paper: str, claim: str, paper_value, model: str, statistic: str, rule: Rule, command: str,
            reason: str) -> Claim:
    """A claim with no number of ours: ``not established``, with ``reason`` in ``interval["how"]``."""
    return Claim(id=id, paper=paper, claim=claim, paper_value=paper_value, model=model, statistic=statistic,
                 ours=None, interval={"low": None, "high": None, "how": f"{NOT_MEASURED}{reason}"}, n_seeds=0,
                 rule=rule.text, verdict="not established", command=command)


def command_of(results_dir, fallback: str) -> str:
    """The command of ``run.json`` in ``results_dir`` with the data directory written ``DATA_DIR`` (else ``fallback``).

    ``--results-dir``, ``--no-plot``, ``--quiet`` (or ``--no-progress``) and ``--resume`` are dropped: they do not
    change the numbers.
    """
    if results_dir is None:
        return fallback
    path = Path(results_dir) / "run.json"
    try:
        command = read_json(path, what="run record")["command"]
        words = shlex.split(command)
    except (OSError, ValueError, KeyError, TypeError):
        return fallback
    if words[:3] == ["python", "-m", "isotropy"]:  # the same command as the console one
        words = ["isotropy", *words[3:]]
    if not words or words[0] != "isotropy":
        return fallback
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        if word in ("--results-dir", "--data-dir"):
            skip = True
            if word == "--data-dir":
                out += ["--data-dir", "DATA_DIR"]
            continue
        if word.startswith(("--results-dir=", "--data-dir=")):
            out += ["--data-dir", "DATA_DIR"] if word.startswith("--data-dir=") else []
            continue
        if word in ("--no-plot", "--quiet", "--no-progress", "--resume"):  # none of them changes the numbers
            continue
        out.append(word)
    return " ".join(shlex.quote(w) for w in out)


def run_config(results_dir) -> dict:
    """The resolved config recorded in ``run.json`` of ``results_dir`` (``{}`` when there is none)."""
    if results_dir is None:
        return {}
    try:
        config = read_json(Path(results_dir) / "run.json", what="run record").get("config")
    except (OSError, ValueError, TypeError, AttributeError):
        return {}
    return config if isinstance(config, dict) else {}


def write_claims(results_dir, claims: Sequence[Claim]) -> Path:
    """Write ``claims.json`` (a list of records) into ``results_dir``, atomically; checks every verdict."""
    from isotropy.experiments._results import write_json

    records = []
    for item in claims:
        record = item.to_dict() if isinstance(item, Claim) else dict(item)
        if record["verdict"] not in VERDICTS:
            raise ValueError(f"The verdict of claim {record['id']!r} must be one of {list(VERDICTS)}. "
                             f"Got {record['verdict']!r} instead.")
        records.append(record)
    ids = [r["id"] for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError(f"Claim ids must be unique; got {ids}.")
    return write_json(Path(results_dir) / "claims.json", records)


def read_claims(path) -> list[dict]:
    """The records of a ``claims.json`` file (or of the one in a directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / "claims.json"
    return read_json(path, what="claims file", expected="the claims.json an 'isotropy run' writes")


def _number(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    value = float(value)
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.4g}"
    return f"{value:.2e}"


def _interval(record: dict) -> str:
    span = record["interval"]
    how = str(span.get("how", "–")).split(REASON_MARK, 1)[0]
    if span.get("low") is None:
        return "not measured" if how.startswith(NOT_MEASURED) else how
    return f"[{_number(span['low'])}, {_number(span['high'])}] ({how})"


def _verdict(record: dict) -> str:
    """The verdict cell: ``**verdict**``, then the reason of a ``not established`` one."""
    reason = reason_of(record) if record["verdict"] == "not established" else None
    return f"**{record['verdict']}**" + (f" — {_cell(reason)}" if reason else "")


def _cell(text) -> str:
    return re.sub(r"\s+", " ", str(text)).replace("|", "\\|").replace("*", "\\*")


def markdown_table(records: Sequence[dict], *, link: str | None = None) -> str:
    """The "paper vs ours" table of ``records`` (rows of ``claims.json``): every cell from the file.

    With ``link`` (a page path), a compact table for the experiments index: claim, model, ours, verdict.
    """
    if link is not None:
        lines = ["| claim | paper | model | ours | verdict |", "|---|---|---|---|---|"]
        for r in records:
            lines.append(f"| [{_cell(r['claim'])}]({link}) | {_cell(r['paper'])} | {_cell(r['model'])} | "
                         f"{_cell(_number(r['ours']))} | {_verdict(r)} |")
        return "\n".join(lines) + "\n"
    lines = ["| id | claim (paper, where) | paper | ours: statistic | ours | interval | seeds | rule | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| `{r['id']}` | {_cell(r['claim'])} ({_cell(r['paper'])}) | {_cell(_number(r['paper_value']))} | "
                     f"{_cell(r['statistic'])} | {_cell(_number(r['ours']))} | {_cell(_interval(r))} | {r['n_seeds']} | "
                     f"{_cell(r['rule'])} | {_verdict(r)} |")
    commands = list(dict.fromkeys(r["command"] for r in records))
    lines += ["", "Reproduce: " + "; ".join(f"`{c}`" for c in commands)]
    return "\n".join(lines) + "\n"
