"""The filter contract: one question about one host, answered with a fixed reason code.

A filter is asked about a host together with one of its candidates (the allocation Placement
proposes on it), because a few answers depend on which providers the candidate uses (which
physical function holds a port's bandwidth). Most filters ignore the candidate.

``check`` returns None when the host, with that candidate, may take one instance of the request,
or one code from ``REASONS`` when it may not. Codes are short fixed strings, never with a host or
a uuid inside, so a diagnosis can count them; never rename or reuse one. A filter holds no state
between calls and must not change what it is given: the pipeline may ask it again after an
earlier instance of the same request has landed (the spec and host states it gets then are new
values).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.host_state import HostState

__all__ = ["HostFilter"]


class HostFilter(ABC):
    NAME: ClassVar[str]
    REASONS: ClassVar[frozenset[str]]

    def passes_every_host(self, spec: RequestSpec) -> bool:
        """True when nothing in ``spec`` asks this filter anything, so that every host passes
        whatever its state (the pipeline then skips it); False when unsure."""
        return False

    @abstractmethod
    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        """None if the host passes, else one of ``REASONS``."""
