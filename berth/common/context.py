"""Who is asking: the identity a request carries once authentication middleware has run."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RequestContext:
    """The caller of one request, in oslo.policy's credential terms."""

    user_id: str | None
    project_id: str | None
    roles: tuple[str, ...] = ()
    system_scope: str | None = None
    request_id: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    def credentials(self) -> dict[str, object]:
        """The credentials dictionary oslo.policy evaluates check strings against."""
        return {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "roles": list(self.roles),
            "system_scope": self.system_scope,
            "is_admin": self.is_admin,
        }
