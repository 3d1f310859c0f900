"""Who is asking: every route of the plugin depends on Airflow's ``get_user`` (the same JWT as
Airflow's REST API and UI, by header or session cookie), which also makes the route answer
401 without one. Plugin apps are anonymous otherwise."""

from __future__ import annotations

from typing import Annotated

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends

from octotrain.catalog.access import Scope

SIMPLE_ADMIN_ROLE = "ADMIN"


def is_airflow_admin(user: BaseUser) -> bool:
    """Airflow's administrators see every project.

    The simple auth manager (embedded default) has roles, and its ``admin`` is the one.
    Other auth managers (FAB, Keycloak) are asked whether the user may change Airflow's
    configuration, which their admin roles grant and no other default role does.
    """
    if isinstance(user, SimpleAuthManagerUser):
        return (user.role or "").upper() == SIMPLE_ADMIN_ROLE
    return get_auth_manager().is_authorized_configuration(method="PUT", user=user)


async def current_scope(user: Annotated[BaseUser, Depends(get_user)]) -> Scope:
    return Scope(username=user.get_name(), admin=is_airflow_admin(user))


CurrentScope = Annotated[Scope, Depends(current_scope)]
