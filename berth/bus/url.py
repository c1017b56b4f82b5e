"""Bus URLs, as a CellMapping or the config file carries them.

``memory://`` or ``memory://<name>``
    the in-process bus; one process's components with the same name share one bus, so each cell
    of an all-in-one deployment can have its own (``memory://cell1``).
``rabbit://<user>:<password>@<host>:<port>/<virtual host>``
    a RabbitMQ broker, one virtual host per cell; the port defaults to 5672 and the virtual host
    to ``/`` (write it ``%2F`` in a path).

Malformed URLs raise ValueError, so a settings model that parses them reports them as bad values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit

DEFAULT_MEMORY_NAME = "default"
DEFAULT_RABBIT_PORT = 5672


@dataclass(frozen=True)
class MemoryURL:
    name: str = DEFAULT_MEMORY_NAME

    def __str__(self) -> str:
        return "memory://" if self.name == DEFAULT_MEMORY_NAME else f"memory://{self.name}"


@dataclass(frozen=True)
class RabbitURL:
    host: str
    port: int = DEFAULT_RABBIT_PORT
    username: str | None = None
    # Kept out of repr and str: URLs end up in logs.
    password: str | None = field(default=None, repr=False)
    virtual_host: str = "/"

    def __str__(self) -> str:
        user = ""
        if self.username is not None:
            user = (
                quote(self.username, safe="") + (":***" if self.password is not None else "") + "@"
            )
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"rabbit://{user}{host}:{self.port}/{quote(self.virtual_host, safe='')}"


BusURL = MemoryURL | RabbitURL


def parse_bus_url(url: str) -> BusURL:
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise ValueError(f"bus URL {_redact(url)!r}: options (?…, #…) are not supported")
    if parts.scheme == "memory":
        if parts.path not in ("", "/"):
            raise ValueError(f"bus URL {url!r}: a memory bus has a name and no path")
        return MemoryURL(unquote(parts.netloc) or DEFAULT_MEMORY_NAME)
    if parts.scheme == "rabbit":
        return _parse_rabbit(url, parts.netloc, parts.path)
    raise ValueError(
        f"bus URL {_redact(url)!r}: unknown scheme {parts.scheme!r}; "
        "use memory://<name> or rabbit://<user>:<password>@<host>:<port>/<virtual host>"
    )


def _parse_rabbit(url: str, netloc: str, path: str) -> RabbitURL:
    shown = _redact(url)
    if "," in netloc:
        raise ValueError(f"bus URL {shown!r}: one broker per URL (clusters are not supported yet)")
    parts = urlsplit(f"//{netloc}")
    try:
        port = parts.port or DEFAULT_RABBIT_PORT
    except ValueError:
        raise ValueError(f"bus URL {shown!r}: the port is not a number from 0 to 65535") from None
    if not parts.hostname:
        raise ValueError(f"bus URL {shown!r}: no host")
    vhost = path[1:] if path.startswith("/") else path
    if "/" in vhost:
        raise ValueError(f"bus URL {shown!r}: write a virtual host's slashes as %2F")
    return RabbitURL(
        host=parts.hostname,
        port=port,
        username=None if parts.username is None else unquote(parts.username),
        password=None if parts.password is None else unquote(parts.password),
        virtual_host=unquote(vhost) or "/",
    )


def _redact(url: str) -> str:
    """``url`` without its password, for error messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.partition(":")[0]
    return parts._replace(netloc=f"{name}:***@{host}").geturl()
