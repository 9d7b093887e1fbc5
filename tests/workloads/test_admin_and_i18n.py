import pytest
from django.conf import settings
from django.urls import reverse

from portal.periods import this_week
from tests.factories import UserFactory
from workloads.records.services import update_workload
from workloads.review.services import save_review_meeting
from workloads.support.services import open_case

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def test_the_admin_shows_workloads_and_cases_read_only(superuser_client, workload, member, org, lead):
    update_workload(user=member, workload=workload, data={"status": "running"})
    case = open_case(user=member, organization=org, title="Quota", description="EBS", category="quota")
    change = superuser_client.get(reverse("admin:workloads_workload_change", args=[workload.pk]))
    assert change.status_code == 200 and "running" in change.text
    assert superuser_client.get(reverse("admin:workloads_supportcase_change", args=[case.pk])).status_code == 200
    meeting, _created = save_review_meeting(user=lead, week_start=this_week())
    assert superuser_client.get(reverse("admin:workloads_reviewmeeting_change", args=[meeting.pk])).status_code == 200
    # Writes go through the services (history, events, email), never through the admin.
    assert superuser_client.get(reverse("admin:workloads_workload_add")).status_code == 403
    response = superuser_client.post(reverse("admin:workloads_workload_change", args=[workload.pk]), {"name": "x"})
    assert response.status_code == 403
    workload.refresh_from_db()
    assert workload.name != "x"


def test_the_case_page_in_japanese(member_client, member, org, lead):
    case = open_case(user=member, organization=org, title="EFA", description="x", category="networking")
    member_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ja"
    text = member_client.get(reverse("support:detail", args=[case.pk])).text
    assert "コメントを追加" in text and "初回の返信待ち" in text and "NCCL / EFA ネットワーク" in text
    nav = member_client.get(reverse("records:tracking")).text
    assert "ワークロード管理" in nav and "サポート" in nav
