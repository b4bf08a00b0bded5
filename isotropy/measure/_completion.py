"""Shell completion of ``isotropy measure``'s option values (click's ``shell_complete``).

Enabled by the user's shell (``eval "$(_ISOTROPY_COMPLETE=bash_source isotropy)"``, see the command-line
page); each function gets the word being completed and returns what may follow. Imports stay light:
the shell runs them at every <Tab>.
"""

from __future__ import annotations

from click.shell_completion import CompletionItem

# what --device takes besides an indexed device such as cuda:1
_DEVICES = ("auto", "cpu", "cuda", "mps")
# isotropy.io.word_vectors.PACKAGED_GLOVE (not imported: it loads numpy, at every <Tab>); a test checks they agree
_PACKAGED_GLOVE = "glove-6b-50d"


def complete_metrics(ctx, param, incomplete: str) -> list[CompletionItem]:
    """``--metrics``: the metric names that start the last comma-separated part, after the parts already typed."""
    from isotropy.metrics.table import METRICS

    done, _, last = incomplete.rpartition(",")
    typed = {part.strip() for part in done.split(",")}
    prefix = f"{done}," if done else ""
    every = ["all"] if not done and "all".startswith(last.strip()) else []  # --metrics all: alone, so first only
    return [CompletionItem(prefix + name) for name in every + sorted(METRICS)
            if name.startswith(last.strip()) and name not in typed]


def _names_or_files(names, incomplete: str) -> list[CompletionItem]:
    """The names that start with the word, with the files and folders that start with it too; files when no name does.

    Bash's completion script drops the names it has gathered when a file item follows (it hands the
    word to the shell's own file completion), so where a name matches, the matching entries of the
    word's folder are listed here as plain items (a folder with its ``/``), or ``g<Tab>`` would
    complete to a packaged name over a local ``gpt2-local/``. A path (``./``, ``/``, ``~``) matches no
    name, so it completes as a file.
    """
    import os

    items = [CompletionItem(name) for name in names if name.lower().startswith(incomplete.lower())]
    if not items:
        return [CompletionItem(incomplete, type="file")]
    folder, start = os.path.split(incomplete)
    try:
        with os.scandir(folder or ".") as entries:
            local = sorted(os.path.join(folder, e.name) + ("/" if e.is_dir() else "") for e in entries
                           if e.name.startswith(start) and not e.name.startswith("."))
    except OSError:
        local = []
    return items + [CompletionItem(path) for path in local if path.rstrip("/") not in names]


def complete_model(ctx, param, incomplete: str) -> list[CompletionItem]:
    """``--model``: the packaged model names that start with the word, else files and folders (.gguf, directories)."""
    from isotropy.models.resolve import DEFAULT_MODEL, PACKAGED_MODELS

    names = [DEFAULT_MODEL, *(key for key in PACKAGED_MODELS if "/" not in key and key != DEFAULT_MODEL.lower())]
    return _names_or_files(names, incomplete)


def complete_embeddings(ctx, param, incomplete: str) -> list[CompletionItem]:
    """``EMBEDDINGS``: ``glove-6b-50d`` (the packaged vectors) when the word starts it, else files and folders."""
    return _names_or_files([_PACKAGED_GLOVE], incomplete) if incomplete else [CompletionItem("", type="file")]


def complete_device(ctx, param, incomplete: str) -> list[CompletionItem]:
    """``--device``: auto, cpu, cuda, mps."""
    return [CompletionItem(name) for name in _DEVICES if name.startswith(incomplete)]


def complete_pooling(ctx, param, incomplete: str) -> list[CompletionItem]:
    """``--pooling``: mean, last, first."""
    from isotropy.models.pooling import POOLINGS

    return [CompletionItem(name) for name in POOLINGS if name.startswith(incomplete)]
