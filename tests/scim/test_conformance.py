"""scim2-tester (python-scim's conformance checker, the authors of scim2-models) against the portal's SCIM endpoint
served for real (pytest's live server): discovery, then create, read, query, replace, PATCH add/replace/remove and
delete of every attribute the portal announces, for Users and Groups. No check may fail; skipped are only the
features the ServiceProviderConfig says the portal does not offer (bulk, sort, ETags, password change)."""

from __future__ import annotations

import httpx2
import pytest
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server

from tenants.scim import tokens

pytestmark = pytest.mark.django_db(transaction=True)

FAILED = {Status.ERROR, Status.CRITICAL} if hasattr(Status, "CRITICAL") else {Status.ERROR}


def test_scim2_tester_finds_nothing_wrong(live_server):
    _token, key = tokens.issue_token(name="scim2-tester")
    with httpx2.Client(
        base_url=f"{live_server.url}/scim/v2", headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as http:
        results = check_server(SyncSCIMClient(http))
    failed = [f"{r.resource_type or ''} {r.title}: {r.reason}" for r in results if r.status in FAILED]
    assert not failed, "\n".join(failed)
    passed = [r for r in results if r.status == Status.SUCCESS]
    # The checker reached the resources, not only discovery (a server it cannot describe ends the run early).
    for resource_type in ("User", "Group"):
        titles = {r.title for r in passed if r.resource_type == resource_type}
        assert {"check_add_attribute", "check_replace_attribute", "check_remove_attribute"} <= titles, titles
    skipped = {r.reason for r in results if r.status == Status.SKIPPED}
    print(f"scim2-tester: {len(passed)} passed, {len(skipped)} skipped: {sorted(skipped)}")
