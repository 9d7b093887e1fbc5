"""Which groups place a person where (no provider needed)."""

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from tenants.models import Membership
from tenants.sso.mapping import place


def test_the_program_groups_by_name_or_path_and_the_rest_ignored():
    placement = place(
        {
            "groups": [
                "all-staff",
                "fmportal:sakura-lab:member",
                "/fmportal/kitsune-ai/admin",
                "fmportal:staff:support-engineer",
                "otherapp:sakura-lab:admin",
            ]
        }
    )
    assert placement.organizations == {"sakura-lab": "member", "kitsune-ai": "admin"}
    assert placement.staff_role == "support_engineer"
    assert placement.groups == [
        "fmportal:sakura-lab:member",
        "/fmportal/kitsune-ai/admin",
        "fmportal:staff:support-engineer",
    ]


def test_the_stronger_role_wins_whatever_the_order():
    groups = ["fmportal:sakura-lab:admin", "fmportal:sakura-lab:member", "fmportal:staff:support_engineer",
              "fmportal:staff:program_manager"]  # fmt: skip
    for ordered in (groups, list(reversed(groups))):
        placement = place({"groups": ordered})
        assert placement.organizations == {"sakura-lab": "admin"}
        assert placement.staff_role == "program_manager"


def test_a_role_the_portal_does_not_have_places_nobody():
    placement = place({"groups": ["fmportal:sakura-lab:owner", "fmportal:staff:janitor", "fmportal::admin"]})
    assert placement.organizations == {} and placement.staff_role is None


def test_every_membership_role_can_be_granted():
    # Roles added to Membership.Role later are granted without touching the mapping.
    groups = [f"fmportal:org-{role}:{role}" for role in Membership.Role.values]
    assert place({"groups": groups}).organizations == {f"org-{role}": role for role in Membership.Role.values}


def test_the_claim_and_prefix_and_map_come_from_settings(settings):
    settings.OIDC_GROUPS_CLAIM = "roles"
    settings.OIDC_GROUP_PREFIX = "hpc"
    settings.OIDC_GROUP_MAP = {"cn=sakura-pi,ou=groups": "sakura-lab:admin", "program-office": "staff:program_manager"}
    placement = place(
        {"groups": ["fmportal:x:admin"], "roles": ["hpc:kitsune-ai:member", "cn=sakura-pi,ou=groups", "program-office"]}
    )
    assert placement.organizations == {"kitsune-ai": "member", "sakura-lab": "admin"}
    assert placement.staff_role == "program_manager"
    assert place({"roles": "hpc:kitsune-ai:member"}).organizations == {"kitsune-ai": "member"}  # a single string
    assert place({"roles": {"not": "a list"}}).organizations == {}


def test_a_group_map_naming_no_role_fails_the_system_check(settings):
    settings.OIDC_GROUP_MAP = {"pis": "sakura-lab:principal"}
    with pytest.raises(SystemCheckError, match="tenants.sso.E001"):
        call_command("check")
