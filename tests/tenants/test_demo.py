import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from django.db.models import Sum
from django.test import RequestFactory

from tenants.models import CapacityPool, Membership, Organization, Program, StaffRole


def counts() -> dict[str, int]:
    models = (Program, Organization, CapacityPool, Membership, StaffRole)
    return {m.__name__: m.objects.count() for m in models}


@pytest.mark.django_db
def test_demo_program_matches_the_real_cycle():
    call_command("load_demo", "--start", "2027-01-01")
    program = Program.objects.get()
    assert (program.starts_on.isoformat(), program.ends_on.isoformat()) == ("2027-01-01", "2027-06-30")
    assert Organization.objects.count() == 12
    p5 = CapacityPool.objects.filter(instance_type__api_name="p5.48xlarge")
    assert p5.aggregate(n=Sum("total_instances"))["n"] == 127
    assert set(p5.values_list("region", flat=True)) == {"us-east-1", "ap-northeast-1"}
    trn1 = CapacityPool.objects.get(instance_type__api_name="trn1.32xlarge")
    assert (trn1.region, trn1.total_instances) == ("us-east-1", 24)


@pytest.mark.django_db
def test_demo_is_idempotent():
    call_command("load_demo")
    first = counts()
    call_command("load_demo")
    assert counts() == first


@pytest.mark.django_db
def test_demo_logins_and_roles():
    call_command("load_demo")
    for username in ("manager", "support", "tenant1", "tenant2"):
        # A login always has a request (django-axes counts failures per client address).
        login = RequestFactory().post("/login/")
        assert authenticate(login, username=username, password="demo") is not None, username
    assert StaffRole.objects.get(user__username="manager").is_program_manager
    assert StaffRole.objects.get(user__username="support").role == StaffRole.Role.SUPPORT_ENGINEER
    assert Membership.objects.get(user__username="tenant2").organization.slug == "kitsune-ai"
    assert Membership.objects.get(user__username="tenant1").organization.slug == "sakura-lab"
    assert Membership.objects.get(user__username="viewer1").role == Membership.Role.VIEWER
    assert authenticate(RequestFactory().post("/login/"), username="viewer1", password="demo") is not None


@pytest.mark.django_db
def test_every_demo_organization_has_members_of_each_role():
    call_command("load_demo")
    orgs = list(Organization.objects.all())
    assert orgs, "the demo made no organization: nothing below would be checked"
    for org in orgs:
        roles = sorted(org.memberships.values_list("role", flat=True))
        assert set(roles) == {"admin", "member", "viewer"}, org.slug
        assert roles.count("admin") == 1 and len(roles) == 4, org.slug


@pytest.mark.django_db
def test_demo_refuses_production(settings):
    settings.PRODUCTION = True
    with pytest.raises(CommandError, match="PORTAL_PRODUCTION"):
        call_command("load_demo")
    assert Organization.objects.count() == 0


@pytest.mark.django_db
def test_no_users_come_from_migrations(django_user_model):
    assert django_user_model.objects.count() == 0


@pytest.mark.django_db
def test_demo_capacity_respects_every_pool_and_leaves_requests_to_review():
    from tenants.capacity.sweep import Span, peak_usage
    from tenants.models import Allocation, CapacityRequest

    call_command("load_demo", "--start", "2027-01-01")
    call_command("load_demo", "--start", "2027-01-01")
    assert Allocation.objects.count() == 12
    pools = list(CapacityPool.objects.all())
    assert pools, "the demo made no pool: nothing below would be checked"
    for pool in pools:
        spans = [Span(a.starts_on, a.ends_on, a.instance_count) for a in pool.allocations.all()]
        assert peak_usage(spans, starts_on=pool.starts_on, ends_on=pool.ends_on).used <= pool.allocatable_instances
    submitted = CapacityRequest.objects.filter(status=CapacityRequest.Status.SUBMITTED)
    assert sorted(submitted.values_list("organization__slug", flat=True)) == ["kitsune-ai", "sakura-lab"]
    assert all(r.pool.starts_on <= r.starts_on and r.ends_on <= r.pool.ends_on for r in submitted)
