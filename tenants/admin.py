from django.contrib import admin

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
    list_display = ["api_name", "accelerator", "accelerators_per_instance", "accelerator_memory_gib", "efa_gbps"]
    inlines = [InstancePriceInline]


@admin.register(CapacityPool)
class CapacityPoolAdmin(admin.ModelAdmin):
    list_display = ["__str__", "program", "total_instances", "spare_instances", "starts_on", "ends_on"]
    list_filter = ["program", "region", "instance_type"]
    list_select_related = ["program", "instance_type"]


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "aws_account_id", "lead_engineer"]
    list_select_related = ["lead_engineer"]
    search_fields = ["name", "slug", "aws_account_id"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(StaffRole)
class StaffRoleAdmin(admin.ModelAdmin):
    list_display = ["user", "role"]
    list_select_related = ["user"]
