"""Keystone's SAML identity-provider module, loaded when first used rather than at start.

Keystone's API and its ``keystone-manage`` import ``keystone.federation.idp`` at start, and that
module imports pysaml2, whose XML schema validators take seconds to build: two to three seconds
of every start of the embedded Keystone and of each of its set-up commands, for endpoints
(``/auth/OS-FEDERATION/saml2`` and ``ecp``) that only a Keystone set up as a SAML identity
provider serves. With ``defer()``, importing the module makes a module object whose code runs
on its first attribute use (``importlib.util.LazyLoader``), so such a request still gets the
real module.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

MODULE = "keystone.federation.idp"


class _DeferredSaml(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != MODULE:
            return None
        # The real spec, found by the other finders; then only its execution is deferred.
        spec = next(
            (
                found
                for finder in sys.meta_path
                if finder is not self
                and (found := getattr(finder, "find_spec", _none)(fullname, path, target))
            ),
            None,
        )
        if spec is None or spec.loader is None:
            return spec
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


def _none(*_args: object) -> None:
    return None


def defer() -> None:
    """From now on, importing keystone's SAML module defers running it (once per process)."""
    if MODULE not in sys.modules and not any(isinstance(f, _DeferredSaml) for f in sys.meta_path):
        sys.meta_path.insert(0, _DeferredSaml())
