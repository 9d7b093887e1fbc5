import pytest
from django.urls import reverse

from tests.factories import PASSWORD, CapacityPoolFactory, MembershipFactory, OrganizationFactory, UserFactory


@pytest.mark.django_db
def test_login_with_username_and_password_lands_on_own_org(client, member, org):
    response = client.post(reverse("login"), {"username": member.username, "password": PASSWORD}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("org-home", args=[org.slug])
    assert org.name in response.text


@pytest.mark.django_db
def test_wrong_password_shows_an_error_and_logs_nobody_in(client, member):
    response = client.post(reverse("login"), {"username": member.username, "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.text
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_anonymous_is_sent_to_login(client, org):
    response = client.get(reverse("org-home", args=[org.slug]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
def test_org_home_shows_account_and_members(member_client, member, org):
    response = member_client.get(reverse("org-home", args=[org.slug]))
    assert response.status_code == 200
    assert org.aws_account_id in response.text
    assert member.username in response.text


@pytest.mark.django_db
def test_org_home_for_staff_says_staff_view(manager_client, org):
    response = manager_client.get(reverse("org-home", args=[org.slug]))
    assert "You see this organization as program staff." in response.text


@pytest.mark.django_db
def test_user_in_two_orgs_chooses_on_home(client):
    user = UserFactory()
    a, b = MembershipFactory(user=user).organization, MembershipFactory(user=user).organization
    client.force_login(user)
    response = client.get(reverse("home"))
    assert response.status_code == 200
    assert a.name in response.text and b.name in response.text


@pytest.mark.django_db
def test_user_in_no_org_gets_an_explanation(client):
    client.force_login(UserFactory())
    response = client.get(reverse("home"))
    assert "You are not a member of any organization yet." in response.text


@pytest.mark.django_db
def test_staff_home_goes_to_program_overview(manager_client):
    assert manager_client.get(reverse("home"))["Location"] == reverse("program-overview")


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["program-overview", "program-organizations"])
def test_program_overview_is_for_staff_only(member_client, name):
    response = member_client.get(reverse(name))
    assert response.status_code == 403
    assert "for program staff" in response.text


@pytest.mark.django_db
def test_program_organizations_lists_orgs_and_pools(manager_client, org, other_org):
    pool = CapacityPoolFactory(total_instances=64, spare_instances=2)
    response = manager_client.get(reverse("program-organizations"))
    assert response.status_code == 200
    assert org.name in response.text and other_org.name in response.text
    assert "2 organizations" in response.text
    assert pool.instance_type.api_name in response.text
    assert ">62<" in response.text  # allocatable = total - spare


@pytest.mark.django_db
def test_program_organizations_empty_state(manager_client):
    response = manager_client.get(reverse("program-organizations"))
    assert "No program is set up yet." in response.text
    assert "No organizations yet." in response.text


@pytest.mark.django_db
def test_program_organizations_queries_do_not_grow_with_orgs(manager_client):
    def count_queries() -> int:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as ctx:
            assert manager_client.get(reverse("program-organizations")).status_code == 200
        return len(ctx.captured_queries)

    CapacityPoolFactory()
    for _ in range(2):
        MembershipFactory()
    few = count_queries()
    for _ in range(30):
        MembershipFactory(organization=OrganizationFactory(lead_engineer=UserFactory()))
    assert count_queries() == few


def test_every_static_file_a_page_links_is_in_static(client):
    import re

    from django.conf import settings
    from django.contrib.staticfiles import finders

    page = client.get(reverse("login")).text
    linked = re.findall(rf'(?:href|src)="{settings.STATIC_URL}([^"]+)"', page)
    assert any(path.endswith("favicon.svg") for path in linked)  # browsers stop asking for /favicon.ico
    assert [path for path in linked if not finders.find(path)] == []
