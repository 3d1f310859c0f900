"""Who is asking: every route of the plugin depends on Airflow's ``get_user`` (the same JWT as
Airflow's REST API and UI, by header or session cookie), which also makes the route answer
401 without one. Plugin apps are anonymous otherwise."""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.base_auth_manager import BaseAuthManager
from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends

from octotrain.catalog.access import Scope

SIMPLE_ADMIN_ROLE = "ADMIN"


def is_airflow_admin(user: BaseUser) -> bool:
    """Airflow's administrators see every project.

    The simple auth manager (embedded default) has roles, and its ``admin`` is the one.
    The FAB auth manager (production) grants no role the right to change Airflow's
    configuration (there is no such permission: its ``Admin`` may only read it, as ``Op`` may),
    so its administrators are those who may edit its roles: only ``Admin`` may by default, and
    whoever may could grant themselves any permission anyway. Other auth managers (Keycloak)
    are asked whether the user may change Airflow's configuration, which their admin role
    grants and no other default role does.
    """
    if isinstance(user, SimpleAuthManagerUser):
        return (user.role or "").upper() == SIMPLE_ADMIN_ROLE
    manager = get_auth_manager()
    if _is_fab(manager):
        from airflow.providers.fab.www.security.permissions import RESOURCE_ROLE

        return manager.is_authorized_custom_view(
            method="PUT", resource_name=RESOURCE_ROLE, user=user
        )
    return manager.is_authorized_configuration(method="PUT", user=user)


def _is_fab(manager: BaseAuthManager[Any]) -> bool:
    """Imported here, not at the top: FAB's auth manager costs every process that loads the
    plugin more than a second, and under FAB it is loaded already."""
    from airflow.providers.fab.auth_manager.fab_auth_manager import FabAuthManager

    return isinstance(manager, FabAuthManager)


async def current_scope(user: Annotated[BaseUser, Depends(get_user)]) -> Scope:
    return Scope(username=user.get_name(), admin=is_airflow_admin(user))


CurrentScope = Annotated[Scope, Depends(current_scope)]
