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
    # Roles of the service token (X-Service-Token) that came with the request, if any.
    service_roles: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def is_admin(self) -> bool:
        return self.has_role("admin")

    def has_role(self, role: str) -> bool:
        """Whether the token carries ``role``; role names compare case-insensitively, as
        oslo.policy's ``role:`` check (and Keystone) compare them."""
        wanted = role.lower()
        return any(r.lower() == wanted for r in self.roles)

    def credentials(self) -> dict[str, object]:
        """The credentials dictionary oslo.policy evaluates check strings against."""
        return {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "roles": list(self.roles),
            "system_scope": self.system_scope,
            "is_admin": self.is_admin,
            "service_roles": list(self.service_roles),
        }
