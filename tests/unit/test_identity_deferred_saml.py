"""Keystone's SAML module is imported at start but runs only when first used."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
from berth.identity.deferred_saml import defer
defer()
from keystone.federation import idp
print("saml2" in sys.modules)
assert idp.SAMLGenerator.__name__ == "SAMLGenerator"
print("saml2" in sys.modules)
"""


def test_the_saml_module_runs_on_first_use_only() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _PROBE], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "True"]
