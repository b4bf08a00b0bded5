"""One seed of the experiment: optimise the embeddings and a linear classifier, record the geometry.

Parameters: the embedding matrix ``E`` (initialised from the encoder's output) and
``nn.Linear(k * d, n_classes)`` with PyTorch's default initialisation and a bias. Adam with
PyTorch defaults, full batch (the gradient of the whole data set at every update).
Cross-entropy for single-label tasks, binary cross-entropy per label for multi-label tasks.

At step 0 (before any update) and after every ``metric_interval``-th update (and the last one)
we record, for the current parameters: the loss, training accuracy (multi-label: exact-match
accuracy) and micro-F1 (equal to accuracy for single-label tasks), IsoScore of ``E`` and the
silhouette of the item representations with respect to the item labels (multi-label: each
distinct label vector is one cluster). When there are more rows (or items) than
``sample_size``, each metric is computed on a fresh random sample of that many rows (items) drawn
at that step. The seed fixes the classifier's initialisation and the samples.
"""

from __future__ import annotations

import time

import numpy as np

from isotropy._utils.sampling import subsample_indices

__all__ = ["COLUMNS", "train_seed"]

COLUMNS = ("step", "loss", "accuracy", "micro_f1", "isoscore", "silhouette")


def _recorded_steps(updates: int, interval: int) -> list[int]:
    steps = list(range(0, updates + 1, interval))
    if steps[-1] != updates:
        steps.append(updates)
    return steps


def train_seed(problem, *, seed: int, updates: int, lr: float = 1e-3, metric_interval: int = 1,
               sample_size: int | None = 10_000, device: str = "cpu", threads: int | None = None,
               progress=None) -> dict:
    """Run one seed; return ``{"seed", "metrics": {column: list}, "timing": {...}}``.

    ``threads`` sets torch's CPU threads for the run (restored afterwards); ``progress`` is called
    with 1 after every update.
    """
    import torch

    from isotropy import isoscore, silhouette_score

    if threads:
        previous_threads = torch.get_num_threads()
        torch.set_num_threads(int(threads))
    try:
        return _train(problem, seed=seed, updates=updates, lr=lr, metric_interval=metric_interval,
                      sample_size=sample_size, device=torch.device(device), progress=progress,
                      isoscore=isoscore, silhouette_score=silhouette_score)
    finally:
        if threads:
            torch.set_num_threads(previous_threads)


def _train(problem, *, seed, updates, lr, metric_interval, sample_size, device, progress, isoscore, silhouette_score):
    import torch

    rng = np.random.default_rng(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        classifier = torch.nn.Linear(problem.index.shape[1] * problem.embeddings.shape[1], problem.n_classes)
    classifier = classifier.to(device)
    E = torch.nn.Parameter(torch.tensor(problem.embeddings, dtype=torch.float32, device=device))
    index = torch.as_tensor(problem.index, device=device)
    # single items that are the rows themselves, in order: skip the gather (and its scatter-add backward)
    identity = problem.index.shape[1] == 1 and np.array_equal(problem.index[:, 0], np.arange(problem.embeddings.shape[0]))
    n_items, n_rows = problem.n_items, problem.embeddings.shape[0]
    multilabel = problem.multilabel
    labels_np = problem.labels
    target = torch.as_tensor(labels_np, device=device)
    target = target.float() if multilabel else target.long()
    loss_fn = torch.nn.BCEWithLogitsLoss() if multilabel else torch.nn.CrossEntropyLoss()
    optimiser = torch.optim.Adam([E, *classifier.parameters()], lr=lr)
    recorded = set(_recorded_steps(updates, metric_interval))
    metrics = {c: [] for c in COLUMNS}
    timing = {"optimisation": 0.0, "isoscore": 0.0, "silhouette": 0.0}

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for step in range(updates + 1):
        t0 = time.perf_counter()
        reps = E if identity else E[index].reshape(n_items, -1)
        logits = classifier(reps)
        loss = loss_fn(logits, target)
        if step in recorded:
            with torch.no_grad():
                if multilabel:
                    predicted = logits > 0
                    truth = target > 0.5
                    tp = (predicted & truth).sum()
                    f1 = 2 * tp / (predicted.sum() + truth.sum()).clamp(min=1)
                    accuracy = (predicted == truth).all(dim=1).float().mean()
                else:
                    accuracy = (logits.argmax(dim=1) == target).float().mean()
                    f1 = accuracy
                loss_value, accuracy, f1 = float(loss), float(accuracy), float(f1)
            sync()
            t1 = time.perf_counter()
            timing["optimisation"] += t1 - t0
            with torch.no_grad():
                rows = E.detach()
                if sample_size is not None and n_rows > sample_size:
                    chosen = subsample_indices(n_rows, sample_size, random_state=rng, sort=False)
                    rows = rows[torch.as_tensor(chosen, device=device)]
                iso = float(isoscore(rows))
                sync()
                t2 = time.perf_counter()
                items = reps.detach()
                item_labels = labels_np
                if sample_size is not None and n_items > sample_size:
                    chosen = subsample_indices(n_items, sample_size, random_state=rng, sort=False)
                    items = items[torch.as_tensor(chosen, device=device)]
                    item_labels = labels_np[chosen]
                sil = float(silhouette_score(items, item_labels))
            t0 = time.perf_counter()
            timing["isoscore"] += t2 - t1
            timing["silhouette"] += t0 - t2
            for column, value in zip(COLUMNS, (step, loss_value, accuracy, f1, iso, sil)):
                metrics[column].append(value)
        if step == updates:
            break
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        sync()
        timing["optimisation"] += time.perf_counter() - t0
        if progress is not None:
            progress(1)
    timing["total"] = sum(timing.values())
    timing["updates"] = updates
    return {"seed": seed, "metrics": metrics, "timing": timing}
