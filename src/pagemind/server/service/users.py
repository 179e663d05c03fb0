"""The acting user's own operations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..views import Me
from .base import ServiceBase

if TYPE_CHECKING:
    from ...store import (
        UserRow,
    )



class UserOps(ServiceBase):
    """The acting user: who they are, their data exported or erased."""

    def me(self, user: UserRow) -> Me:
        return Me(user, self.auth)

    def export(self, user: UserRow) -> dict[str, Any]:
        return self.pm.users.export(user.id)

    def erase(self, user: UserRow) -> dict[str, int]:
        return self.pm.users.erase(user.id)
