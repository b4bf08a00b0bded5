"""A package's public names imported on first use: ``__getattr__`` and ``__dir__`` from a map of name -> module."""

from __future__ import annotations

import importlib

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str], namespace: dict):
    """``(__getattr__, __dir__)`` for ``package``: each name of ``exports`` is read from its module when first asked
    for, and kept in the package's ``namespace`` (its ``globals()``) from then on.

    >>> getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math"}, ns := {})
    >>> getattr_("sqrt")(4.0), "sqrt" in ns, "sqrt" in dir_()
    (2.0, True, True)
    """

    def __getattr__(name):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
