from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = _("Tenants and capacity")

    def ready(self) -> None:
        from tenants import audit_labels
        from tenants.access import is_program_manager
        from tenants.capacity import ledger  # noqa: F401 (keeps the pool ledger: signal receivers)
        from tenants.capacity.planning.reasons import AUDIT_DETAILS
        from tenants.logins import lockout  # noqa: F401 (logs each lockout: a signal receiver)
        from tenants.sso import checks, sessions  # noqa: F401 (providers and group rules: system checks; sessions noted at sign-in)
        from tenants.twofactor import services  # noqa: F401 (a login of an account with a second factor owes it)

        # The audit trail's plan lines: their details in words, and the plan's page linked for those who may open it.
        audit_labels.register(readers={"capacityplan": is_program_manager}, details={"capacityplan": AUDIT_DETAILS})
