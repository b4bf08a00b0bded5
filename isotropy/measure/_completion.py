"""Shell completion of ``isotropy measure``'s option values (click's ``shell_complete``).

Enabled by the user's shell (``eval "$(_ISOTROPY_COMPLETE=bash_source isotropy)"``, see the command-line
page); each function gets the word being completed and returns what may follow. Imports stay light:
the shell runs them at every <Tab>.
"""

from __future__ import annotations

from click.shell_completion import CompletionItem

# what --device takes besides an indexed device such as cuda:1
_DEVICES = ("auto", "cpu", "cuda", "mps")


def complete_metrics(ctx, param, incomplete: str) -> list[CompletionItem]:
    """``--metrics``: the metric names that start the last comma-separated part, after the parts already typed."""
    from isotropy.metrics.table import METRICS

    done, _, last = incomplete.rpartition(",")
    typed = {part.strip() for part in done.split(",")}
    prefix = f"{done}," if done else ""
    return [CompletionItem(prefix + name) for name in sorted(METRICS)
            if name.startswith(last.strip()) and name not in typed]


def complete_model(ctx, param, incomplete: str) -> list[CompletionItem]:
    """``--model``: the packaged model names that start with the word, then files and folders (.gguf, directories)."""
    from isotropy.models.resolve import DEFAULT_MODEL, PACKAGED_MODELS

    names = [DEFAULT_MODEL, *(key for key in PACKAGED_MODELS if "/" not in key and key != DEFAULT_MODEL.lower())]
    items = [CompletionItem(name) for name in names if name.lower().startswith(incomplete.lower())]
    return items + [CompletionItem(incomplete, type="file")]


def complete_device(ctx, param, incomplete: str) -> list[CompletionItem]:
    """``--device``: auto, cpu, cuda, mps."""
    return [CompletionItem(name) for name in _DEVICES if name.startswith(incomplete)]


def complete_pooling(ctx, param, incomplete: str) -> list[CompletionItem]:
    """``--pooling``: mean, last, first."""
    from isotropy.models.pooling import POOLINGS

    return [CompletionItem(name) for name in POOLINGS if name.startswith(incomplete)]
