"""`manage.py check` (and every start) names a provider entry that cannot be used, and a group rule that grants no
role the portal has."""

from django.conf import settings
from django.core.checks import Error, register

from tenants.sso import providers
from tenants.sso.mapping import Placement


@register()
def provider_settings(app_configs, **kwargs):
    found, errors = providers.configured()
    problems = [Error(f"SSO_PROVIDERS: {error}.", id="tenants.sso.E002") for error in errors]
    rules = {"OIDC_GROUP_MAP": settings.OIDC_GROUP_MAP}
    rules |= {f"provider {p.key!r}'s group_map": p.group_map for p in found if p.key != providers.LEGACY_KEY}
    for where, group_map in rules.items():
        problems += [
            Error(
                f"{where} maps {group!r} to {target!r}, which is not <org-slug>:<role> or staff:<staff-role> with a "
                "role the portal has.",
                id="tenants.sso.E001",
            )
            for group, target in group_map.items()
            if not isinstance(target, str) or not Placement().grant(target)
        ]
    return problems
