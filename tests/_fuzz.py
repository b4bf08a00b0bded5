"""Inputs of the readers' fuzz tests."""

from __future__ import annotations


def spliced(valid: bytes, data: bytes) -> bytes:
    """A valid file with fuzzed bytes inserted at a position the bytes themselves choose (so hypothesis shrinks it)."""
    cut = len(data) % (len(valid) + 1)
    return valid[:cut] + data + valid[cut:]
