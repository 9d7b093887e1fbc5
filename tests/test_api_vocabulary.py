"""One vocabulary across the API: the estimate, capacity requests and workloads name a model's
size, its training tokens and the expected utilization the same way — parameter_count, training_tokens,
expected_mfu. The former names (the estimate's parameters, tokens, mfu; a workload's target_tokens) still work
for one release and are marked deprecated in the schema."""

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.factories import WorkloadFactory
from tests.test_api_schema import properties

pytestmark = pytest.mark.django_db

WINDOW = {"instance_type": "p5.48xlarge", "region": "us-east-1", "instance_count": 2}
DATES = {"starts_on": "2027-01-01", "ends_on": "2027-01-31"}
CANONICAL = {"parameter_count": 7 * 10**9, "training_tokens": 10**12, "expected_mfu": "0.350"}
FORMER = {"parameters": 7 * 10**9, "tokens": 10**12, "mfu": "0.350"}
# The names the API used before it had one vocabulary: each is the deprecated alias of the name it has now.
FORMER_NAMES = {"parameters", "tokens", "mfu", "target_tokens"}


@pytest.fixture
def estimate(member_api, catalog):
    def post(body: dict):
        return member_api.post("/api/v1/estimate/", {**WINDOW, **DATES, **body}, format="json")

    return post


def test_the_estimate_takes_the_capacity_request_names(estimate):
    response = estimate(CANONICAL)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["parameter_count"], body["training_tokens"], body["expected_mfu"]) == (7 * 10**9, 10**12, "0.350")
    assert body["instances_for_window"] >= 1


def test_the_former_names_give_the_same_estimate_and_are_answered_too(estimate):
    now, before = estimate(CANONICAL).json(), estimate(FORMER).json()

    assert now == before
    assert (now["parameters"], now["tokens"], now["mfu"]) == (7 * 10**9, 10**12, "0.350")  # for old readers


def test_both_names_with_different_values_is_a_400_naming_the_former(estimate):
    response = estimate({**CANONICAL, "parameters": 8 * 10**9})
    assert response.status_code == 400
    assert response.json() == {
        "parameters": ["Give parameter_count or its former name parameters, not both with different values."]
    }
    assert estimate({**CANONICAL, "parameters": 7 * 10**9}).status_code == 200  # the same value twice is fine


def test_an_error_is_named_as_the_client_named_the_field(estimate):
    former = estimate({"parameters": 70}).json()
    assert "Did you mean 70,000,000,000?" in former["parameters"][0] and "parameter_count" not in former
    now = estimate({"parameter_count": 70}).json()
    assert "Did you mean 70,000,000,000?" in now["parameter_count"][0]
    assert estimate({}).json()["parameter_count"] == ["This field is required."]


def test_a_workload_names_its_tokens_training_tokens(member_api, org, member):
    from tests.workloads.conftest import WORKLOAD_INPUT

    data = {**WORKLOAD_INPUT, "organization": org.slug}
    del data["target_tokens"]
    created = member_api.post("/api/v1/workloads/", {**data, "training_tokens": 2 * 10**12}, format="json")
    assert created.status_code == 201, created.json()
    assert (created.json()["training_tokens"], created.json()["target_tokens"]) == (2 * 10**12, 2 * 10**12)

    renamed = member_api.patch(
        f"/api/v1/workloads/{created.json()['id']}/", {"target_tokens": 3 * 10**12}, format="json"
    )
    assert renamed.json()["training_tokens"] == 3 * 10**12  # the former name still writes the field


def test_workloads_order_by_training_tokens(member_api, org):
    for tokens in (3, 1, 2):
        WorkloadFactory(organization=org, target_tokens=tokens * 10**12)
    ordered = member_api.get("/api/v1/workloads/?ordering=training_tokens").json()["results"]
    assert [w["training_tokens"] for w in ordered] == [10**12, 2 * 10**12, 3 * 10**12]


def test_the_schema_marks_every_former_name_deprecated_and_uses_it_nowhere_else():
    components = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    former = [
        (path, prop.get("deprecated", False))
        for body_name, body in components.items()
        for path, name, prop in properties(body, body_name)
        if name in FORMER_NAMES
    ]
    assert former, "the schema lists the former names while they work"
    assert [path for path, deprecated in former if not deprecated] == []


def test_the_same_value_written_two_ways_under_both_names_is_no_conflict(estimate):
    assert estimate({**CANONICAL, "mfu": 0.35}).status_code == 200  # "0.350" and 0.35
    assert estimate({**CANONICAL, "parameters": "7000000000"}).status_code == 200


def test_a_workload_read_is_written_back_as_is(member_api, org):
    """A script GETs a workload, changes a field and PUTs (or PATCHes) the whole object back: the read-only `fit`
    and the former `target_tokens` it read come back with it and are no error."""
    workload = WorkloadFactory(organization=org, target_tokens=10**12)
    url = f"/api/v1/workloads/{workload.pk}/"
    read = member_api.get(url).json()

    put = member_api.put(url, {**read, "notes": "resumed from step 40k"}, format="json")
    assert put.status_code == 200, put.json()
    changed = member_api.patch(url, {**put.json(), "training_tokens": 2 * 10**12}, format="json")
    assert changed.status_code == 200, changed.json()
    assert (changed.json()["training_tokens"], changed.json()["target_tokens"]) == (2 * 10**12, 2 * 10**12)
    by_former = member_api.patch(url, {**changed.json(), "target_tokens": 3 * 10**12}, format="json")
    assert by_former.json()["training_tokens"] == 3 * 10**12  # the former name changed, the new one as read

    history = member_api.get(f"{url}history/").json()["results"]
    assert {change["field"] for change in history if change["kind"] == "changed"} == {"notes", "training_tokens"}
