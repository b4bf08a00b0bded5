"""Command-line helpers shared by the experiment commands."""

from __future__ import annotations

import click

__all__ = ["parse_set_options"]


def parse_set_options(pairs, *, example: str) -> dict:
    """Turn repeated ``--set KEY=VALUE`` options into ``{key: value}``, values parsed as YAML.

    ``example`` is shown in the error for a malformed pair. Numbers such as ``3e-5``, which
    YAML 1.1 reads as strings, become floats.
    """
    import yaml

    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE (e.g. {example}). Got {pair!r} instead.",
                                     param_hint="--set")
        parsed = yaml.safe_load(value)
        if isinstance(parsed, str):
            try:
                parsed = float(parsed)
            except ValueError:
                pass
        overrides[key.strip()] = parsed
    return overrides
