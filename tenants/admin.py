from django import forms
from django.contrib import admin

from tenants.capacity import pools
from tenants.members.models import Invitation
from tenants.models import CapacityPool, InstancePrice, InstanceType, Membership, Organization, Program, StaffRole


@admin.register(Program)
class ProgramAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "starts_on", "ends_on", "timezone", "currency", "usd_exchange_rate"]
    prepopulated_fields = {"slug": ["name"]}


class InstancePriceInline(admin.TabularInline):
    model = InstancePrice
    extra = 0


@admin.register(InstanceType)
class InstanceTypeAdmin(admin.ModelAdmin):
    list_display = [
        "api_name",
        "accelerator",
        "accelerators_per_instance",
        "ranks_per_instance",
        "accelerator_memory_gib",
        "efa_gbps",
    ]
    inlines = [InstancePriceInline]


class CapacityPoolForm(forms.ModelForm):
    class Meta:
        model = CapacityPool
        fields = ["program", "instance_type", "region", "capacity_reservation_id", "total_instances",
                  "spare_instances", "starts_on", "ends_on"]  # fmt: skip

    def clean(self):
        data = super().clean()
        if self.instance.pk and not self.errors:
            # Shrinking a pool below what is already allocated would break the invariant.
            pools.check_pool_change(
                pool=self.instance,
                total_instances=data["total_instances"],
                spare_instances=data["spare_instances"],
                starts_on=data["starts_on"],
                ends_on=data["ends_on"],
            )
        return data


@admin.register(CapacityPool)
class CapacityPoolAdmin(admin.ModelAdmin):
    form = CapacityPoolForm
    list_display = ["__str__", "program", "total_instances", "spare_instances", "starts_on", "ends_on"]
    list_filter = ["program", "region", "instance_type"]
    list_select_related = ["program", "instance_type"]

    def save_model(self, request, obj, form, change):
        pools.save_pool(pool=obj)  # re-checked under the pool's row lock


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]
    readonly_fields = ["source"]  # one added here is the portal's; one from sign-in follows the person's groups


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "aws_account_id", "lead_engineer", "language"]
    list_select_related = ["lead_engineer"]
    search_fields = ["name", "slug", "aws_account_id"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(StaffRole)
class StaffRoleAdmin(admin.ModelAdmin):
    list_display = ["user", "role", "source"]
    readonly_fields = ["source"]
    list_select_related = ["user"]


# Admin of the sub-packages: Django imports only this module.
import tenants.scim.admin  # noqa: E402, F401
import tenants.service_accounts.admin  # noqa: E402, F401
import tenants.sso.admin  # noqa: E402, F401
import tenants.tokens.admin  # noqa: E402, F401


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Invitations are sent from the Members page or the API (emailed, audited); here they are read only."""

    list_display = ("email", "organization", "role", "state", "invited_by", "created_at", "expires_at")
    list_filter = ("organization", "role")
    search_fields = ("email",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
