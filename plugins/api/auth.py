"""Who is asking: every route of the plugin depends on Airflow's ``get_user`` (the same JWT as
Airflow's REST API and UI, by header or session cookie), which also makes the route answer
401 without one. Plugin apps are anonymous otherwise."""

from __future__ import annotations

from typing import Annotated

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends

from hooks.airflow.airflow_compat import auth_manager, fab_user_may_edit_roles, simple_user_is_admin
from octotrain.catalog.access import Scope


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
    simple_admin = simple_user_is_admin(user)
    if simple_admin is not None:
        return simple_admin
    manager = auth_manager()
    fab_admin = fab_user_may_edit_roles(manager, user)
    if fab_admin is not None:
        return fab_admin
    return manager.is_authorized_configuration(method="PUT", user=user)


async def current_scope(user: Annotated[BaseUser, Depends(get_user)]) -> Scope:
    return Scope(username=user.get_name(), admin=is_airflow_admin(user))


CurrentScope = Annotated[Scope, Depends(current_scope)]
