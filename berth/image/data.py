"""Where an image's data is kept, behind the few calls the Image API makes of it.

``DataStore`` is the narrow interface (keep, read, forget the bytes of one image); ``FileStore``
keeps each image as one file named by its id in a directory (the all-in-one's
``<data_dir>/images``). Data is written as it arrives, never held whole: the digests Glance
shows (``checksum``, the md5, and ``os_hash_value``, the sha512) are computed on the way, and a
write goes to a temporary file renamed into place only once it is complete, so a reader never
sees half an image.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

HASH_ALGO = "sha512"
# How much of a file one read gives a download.
READ_CHUNK = 64 * 1024


class TooLarge(Exception):
    """The data passed the size limit; nothing was kept."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"The image data is larger than the limit of {limit} bytes.")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Written:
    """What was kept: its length and digests (hex)."""

    size: int
    checksum: str
    os_hash_value: str


class DataStore(Protocol):
    def write(self, image_id: str, chunks: Iterable[bytes], limit: int) -> Written:
        """Keep ``chunks`` as the image's data (replacing any); ``TooLarge`` past ``limit``."""
        ...

    def read(self, image_id: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """The bytes from ``start`` to ``end`` (exclusive; None: the end); FileNotFoundError
        when the image has no data here."""
        ...

    def delete(self, image_id: str) -> None:
        """Forget the image's data; nothing to forget is not an error."""
        ...


class FileStore:
    """One file per image in ``root`` (made on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, image_id: str) -> Path:
        # Ids are UUIDs checked by the API; a separator would still escape the directory.
        if "/" in image_id or image_id.startswith("."):
            raise ValueError(f"not an image id: {image_id!r}")
        return self.root / image_id

    def write(self, image_id: str, chunks: Iterable[bytes], limit: int) -> Written:
        self.root.mkdir(parents=True, exist_ok=True)
        final = self._path(image_id)
        partial = self.root / f".{image_id}.{uuid.uuid4().hex}.part"
        md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
        try:
            with partial.open("wb") as out:
                for chunk in chunks:
                    size += len(chunk)
                    if size > limit:
                        raise TooLarge(limit)
                    md5.update(chunk)
                    sha512.update(chunk)
                    out.write(chunk)
            os.replace(partial, final)
        finally:
            partial.unlink(missing_ok=True)
        return Written(size, md5.hexdigest(), sha512.hexdigest())

    def read(self, image_id: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        # Opened now, so a missing file is known before the answer starts.
        source = self._path(image_id).open("rb")
        return _chunks(source, start, end)

    def delete(self, image_id: str) -> None:
        self._path(image_id).unlink(missing_ok=True)


def _chunks(source: BinaryIO, start: int, end: int | None) -> Iterator[bytes]:
    with source:
        source.seek(start)
        left = None if end is None else end - start
        while left is None or left > 0:
            chunk = source.read(READ_CHUNK if left is None else min(READ_CHUNK, left))
            if not chunk:
                return
            if left is not None:
                left -= len(chunk)
            yield chunk
