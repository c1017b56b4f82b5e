"""Versions of the values and messages that cross the bus.

Every document a compute service sends carries ``"v": "MAJOR.MINOR"``. A reader understands one
major version: a newer minor only adds fields, which it ignores (so services can be upgraded one
at a time), and any other major is refused with ``IncompatibleVersion``, which names both sides.
A document without ``v`` was written before versions existed (request specs kept in the API
database by older releases) and reads as 1.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

VERSION_KEY = "v"


class IncompatibleVersion(ValueError):
    """A document or message of a major version this service does not understand."""


@dataclass(frozen=True, order=True, slots=True)
class Version:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: object) -> Version:
        major, dot, minor = str(text).partition(".")
        if not (dot and major.isdigit() and minor.isdigit()):
            raise IncompatibleVersion(f"{text!r} is not a version (MAJOR.MINOR)")
        return cls(int(major), int(minor))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def check(self, kind: str, seen: Version) -> None:
        """Refuse ``seen`` unless this version (what the reader understands) can read it."""
        if seen.major != self.major:
            raise IncompatibleVersion(
                f"{kind} {seen} cannot be read by this service, which understands "
                f"{kind} {self.major}.x (up to {self}); upgrade the older side"
            )


def stamp(version: Version, fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` as a document of ``version``."""
    return {VERSION_KEY: str(version), **fields}


def read(kind: str, understood: Version, document: Mapping[str, Any]) -> Mapping[str, Any]:
    """``document`` once its version is known to be readable (its unknown fields stay unread)."""
    if not isinstance(document, Mapping):
        raise IncompatibleVersion(f"a {kind} is a JSON object, not {type(document).__name__}")
    understood.check(kind, Version.parse(document.get(VERSION_KEY, "1.0")))
    return document
