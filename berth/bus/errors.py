"""What can go wrong on the bus, as the caller sees it.

Every error is a ``BusError``. None of them carries a Python object from the other side: a remote
failure arrives as a class name and a message, the only thing a real broker could have carried.
"""

from __future__ import annotations


class BusError(Exception):
    """Base of every error the bus raises."""


class BusUnavailable(BusError):
    """The bus cannot be reached, or its backend cannot be used at all."""


class BusClosed(BusError):
    """The bus was closed: it takes no new messages, and calls still waiting get no reply."""


class NoServer(BusError):
    """A call to a topic nobody serves: nothing could ever answer it, so it fails at once."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"no server for topic {topic!r}")
        self.topic = topic


class CallTimeout(BusError):
    """No reply in time.

    The method may still have run, or may run later: a timeout says nothing about the other side.
    """

    def __init__(self, topic: str, method: str, timeout: float) -> None:
        super().__init__(f"no reply to {method!r} on {topic!r} within {timeout:g}s")
        self.topic = topic
        self.method = method
        self.timeout = timeout


class NoSuchMethod(BusError):
    """The server on the topic has no public method of that name."""

    def __init__(self, method: str) -> None:
        super().__init__(f"no method {method!r}")
        self.method = method


class RemoteError(BusError):
    """The remote method raised: its exception's class name and message, never the object."""

    def __init__(self, exc_type: str, message: str) -> None:
        super().__init__(f"{exc_type}: {message}" if message else exc_type)
        self.exc_type = exc_type
        self.message = message
