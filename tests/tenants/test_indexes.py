"""Every ordering a capacity list accepts is served by an index that starts with it (`?ordering=` on the API,
the models' default orderings, the pages' fixed ones, the landing page's lists), so a page of 25 never sorts the
whole table."""

import pytest

from tenants.capacity.api import AllocationViewSet, CapacityRequestViewSet
from tenants.models import Allocation, CapacityRequest
from workloads.clusters.models import Cluster
from workloads.health.models import HealthEvent
from workloads.support.models import SupportCase

# The pages' orderings (tenants/capacity/views.py and staff_views.py), as (model, fields).
PAGE_ORDERINGS = [
    (CapacityRequest, ["status", "submitted_at", "id"]),  # the review queue: submitted, oldest first
    (CapacityRequest, ["organization", "created_at", "id"]),  # an organization's requests
    (Allocation, ["starts_on", "id"]),  # the staff allocations page (read backwards: newest first)
    (Allocation, ["organization", "starts_on", "id"]),  # an organization's allocations
    # The landing page's lists (workloads/program/week.py), six rows of each read in an index's order
    (SupportCase, ["severity", "created_at", "id"]),  # open S1/S2 cases
    (HealthEvent, ["observed_at", "id"]),  # open critical incidents
    (Cluster, ["interconnect_suspect_since", "id"]),
    (Cluster, ["reporter_silent_since", "id"]),
    (Allocation, ["ends_on", "id"]),  # ending in the next 14 days
]


def leading(model) -> list[list[str]]:
    return [[model._meta.get_field(name.lstrip("-")).column for name in index.fields] for index in model._meta.indexes]


def served(model, fields: list[str]) -> bool:
    names = ["id" if f.lstrip("-") == "pk" else f.lstrip("-") for f in fields]
    wanted = [model._meta.get_field(name).column for name in names]
    if wanted == [model._meta.pk.column]:
        return True  # the primary key's own index
    return any(index[: len(wanted)] == wanted for index in leading(model))


@pytest.mark.parametrize(
    ("model", "field"),
    [(view.model, field) for view in (CapacityRequestViewSet, AllocationViewSet) for field in view.ordering_fields],
)
def test_every_api_ordering_has_an_index(model, field):
    assert served(model, [field, "id"]), f"?ordering={field} on {model.__name__} sorts the whole table"


@pytest.mark.parametrize("model", [CapacityRequest, Allocation])
def test_the_default_ordering_has_an_index(model):
    assert served(model, list(model._meta.ordering))


@pytest.mark.parametrize(("model", "fields"), PAGE_ORDERINGS)
def test_the_pages_orderings_have_an_index(model, fields):
    assert served(model, fields)


def _table_orderings():
    from portal.tables import orderings
    from tenants.capacity.tables import AllocationTable
    from workloads.jobs.models import Job
    from workloads.jobs.tables import JobTable

    return [
        (model, column, fields)
        for model, table in ((Allocation, AllocationTable), (Job, JobTable))
        for column, fields in orderings(table)
    ]


@pytest.mark.parametrize(("model", "column", "fields"), _table_orderings())
def test_every_sortable_column_of_a_list_has_an_index(model, column, fields):
    """a column the allocation pages sort by (?sort=) is one an index starts with."""
    assert served(model, list(fields)), f"?sort={column} sorts every {model.__name__}"
