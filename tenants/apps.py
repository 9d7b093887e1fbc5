from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = _("Tenants and capacity")

    def ready(self) -> None:
        from tenants.capacity import ledger  # noqa: F401 (keeps the pool ledger: signal receivers)
        from tenants.logins import lockout  # noqa: F401 (logs each lockout: a signal receiver)
        from tenants.sso import checks  # noqa: F401 (OIDC_GROUP_MAP's roles: a system check)
        from tenants.twofactor import services  # noqa: F401 (a login of an account with a second factor owes it)
