"""`manage.py check` (and every start) names an OIDC_GROUP_MAP entry that grants no role the portal has."""

from django.conf import settings
from django.core.checks import Error, register

from tenants.sso.mapping import Placement


@register()
def group_map_roles(app_configs, **kwargs):
    return [
        Error(
            f"OIDC_GROUP_MAP maps {group!r} to {target!r}, which is not <org-slug>:<role> or staff:<staff-role> "
            "with a role the portal has.",
            id="tenants.sso.E001",
        )
        for group, target in settings.OIDC_GROUP_MAP.items()
        if not Placement().grant(target)
    ]
