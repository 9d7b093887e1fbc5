"""Bad input to every outcomes form is a form error, never a 500: each field of each form gets values of the wrong
kind, out of range, too long, or shaped to trip a parser, posted by a program manager and by an admin."""

import pytest

from tenants.models import Membership
from tests.factories import MembershipFactory, MilestoneFactory
from workloads.outcomes.forms import BudgetForm, DeliverableForm, MilestoneForm, ReportForm, ReviewForm
from workloads.outcomes.reports.forms import GenerateForm, RecipientForm

BAD = ["", " ", "-1", "0", "1e309", "9" * 40, "abc", "２０２７-０１-０１", "2027-02-30", "x" * 5000, "<script>",
       "%(x)s", "a--b/c", "10.1/x", "1,2,3,4,5,6", "80、100", "\x00"]  # fmt: skip


def fields_of(form_class) -> list[str]:
    return list(form_class.base_fields)


@pytest.fixture
def milestone(org):
    return MilestoneFactory(organization=org)


@pytest.mark.parametrize("value", BAD)
def test_no_outcomes_form_answers_500(value, org, program, manager_client, client, milestone):
    admin = MembershipFactory(organization=org, role=Membership.Role.ADMIN).user
    client.force_login(admin)
    posts = [
        (manager_client, f"/orgs/{org.slug}/milestones/new/", fields_of(MilestoneForm)),
        (manager_client, f"/milestones/{milestone.pk}/edit/", fields_of(MilestoneForm)),
        (manager_client, f"/orgs/{org.slug}/outcomes/budget/", fields_of(BudgetForm)),
        (manager_client, "/outcomes/budget/", fields_of(BudgetForm)),
        (manager_client, f"/milestones/{milestone.pk}/decide/", ["decision", "comment"]),
        (manager_client, "/outcomes/reports/generate/", fields_of(GenerateForm)),
        (manager_client, "/outcomes/reports/recipients/", [*fields_of(RecipientForm), "organization"]),
        (client, f"/orgs/{org.slug}/deliverables/new/", fields_of(DeliverableForm)),
        (client, f"/milestones/{milestone.pk}/report/", fields_of(ReportForm)),
        (client, f"/orgs/{org.slug}/outcomes/review/", fields_of(ReviewForm)),
    ]
    for poster, url, fields in posts:
        response = poster.post(url, dict.fromkeys(fields, value))
        assert response.status_code < 500, (url, value, response.status_code)
