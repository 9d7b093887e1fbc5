"""Deliverables: each kind names what it must, identifiers are checked by their issuers' rules (the Hub's own
validator for a repository id), and links stay inside the organization."""

from datetime import date

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from tests.factories import DeliverableFactory, MembershipFactory, MilestoneFactory
from workloads.outcomes import services
from workloads.outcomes.models import Deliverable

MODEL = {"kind": "model", "title": "Alpha 13B", "released_on": date(2027, 3, 1), "hf_repo_id": "alpha-lab/alpha-13b",
         "license": "apache-2.0", "parameter_count": 13_000_000_000}  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("hf_repo_id", "alpha-13b"),  # no organization
        ("hf_repo_id", "alpha--lab/alpha-13b"),
        ("hf_repo_id", "alpha-lab/alpha 13b"),
        ("hf_repo_id", "alpha-lab/" + "a" * 97),
        ("license", "Apache 2.0"),
        ("license", ""),
    ],
)
def test_a_model_release_with_a_bad_identifier_is_refused_naming_the_field(org, member, field, value):
    with pytest.raises(ValidationError) as error:
        services.record_deliverable(user=member, organization=org, data={**MODEL, field: value})
    assert field in error.value.message_dict


def test_each_kind_names_what_it_must(org, member):
    with pytest.raises(ValidationError) as error:
        services.record_deliverable(
            user=member,
            organization=org,
            data={"kind": "evaluation", "title": "JGLUE", "released_on": date(2027, 3, 2)},
        )
    assert set(error.value.message_dict) == {"benchmark", "score"}
    with pytest.raises(ValidationError) as error:
        services.record_deliverable(
            user=member,
            organization=org,
            data={"kind": "paper", "title": "Report", "released_on": date(2027, 3, 2), "doi": "11.1/x"},
        )
    assert set(error.value.message_dict) == {"doi"}


def test_a_release_links_its_own_milestone_and_an_evaluation_its_own_model(org, other_org, member, manager):
    theirs = MilestoneFactory(organization=other_org)
    with pytest.raises(ValidationError) as error:
        services.record_deliverable(user=member, organization=org, data={**MODEL, "milestone": theirs})
    assert "milestone" in error.value.message_dict
    model = services.record_deliverable(
        user=member, organization=org, data={**MODEL, "milestone": MilestoneFactory(organization=org)}
    )
    evaluation = services.record_deliverable(
        user=member,
        organization=org,
        data={"kind": "evaluation", "title": "Alpha 13B on JMMLU", "released_on": date(2027, 3, 5), "model": model,
              "benchmark": "JMMLU", "setting": "5-shot", "metric": "accuracy", "score": "0.5412"},
    )  # fmt: skip
    assert list(model.evaluations.all()) == [evaluation]
    with pytest.raises(ValidationError) as error:
        services.record_deliverable(user=member, organization=org, data={**MODEL, "title": "Again"})
    assert error.value.message_dict["hf_repo_id"] == [
        "The organization has already recorded this repository as a deliverable."
    ]
    with pytest.raises(PermissionDenied):
        services.record_deliverable(user=manager, organization=org, data={**MODEL, "hf_repo_id": "alpha-lab/other"})


def test_the_form_keeps_what_was_typed_and_shows_the_error(org, member_client, other_org):
    response = member_client.post(
        f"/orgs/{org.slug}/deliverables/new/",
        {
            "kind": "model",
            "title": "Alpha 13B",
            "released_on": "2027-03-01",
            "hf_repo_id": "alpha--lab/x",
            "license": "mit",
        },
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "Not a Hugging Face repository id" in body and 'value="Alpha 13B"' in body
    response = member_client.post(
        f"/orgs/{org.slug}/deliverables/new/",
        {"kind": "paper", "title": "Technical report", "released_on": "2027-03-01", "arxiv_id": "2407.03963"},
    )
    assert response.status_code == 302
    theirs = DeliverableFactory(organization=other_org)
    assert member_client.get(f"/deliverables/{theirs.pk}/edit/").status_code == 404
    assert member_client.post(f"/deliverables/{theirs.pk}/delete/").status_code == 404
    mine = Deliverable.objects.get(title="Technical report")
    assert member_client.post(f"/deliverables/{mine.pk}/delete/").status_code == 302
    assert not Deliverable.objects.filter(pk=mine.pk).exists()


def test_a_repository_is_unique_within_an_organization_whatever_its_case(org, other_org, member):
    services.record_deliverable(user=member, organization=org, data=MODEL)
    with pytest.raises(ValidationError) as error:
        services.record_deliverable(user=member, organization=org, data={**MODEL, "hf_repo_id": "Alpha-Lab/Alpha-13B"})
    assert "hf_repo_id" in error.value.message_dict
    theirs = MembershipFactory(organization=other_org).user
    # Another organization's record neither blocks nor shows: it may record the same id.
    services.record_deliverable(user=theirs, organization=other_org, data=MODEL)
    assert Deliverable.objects.filter(hf_repo_id="alpha-lab/alpha-13b").count() == 2
