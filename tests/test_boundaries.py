"""Zulip's rule: views and API modules never query a tenant model directly; they go through the gate
(`get_org_access_or_404`, `visible_organizations`, `<Model>.objects.for_org/visible_to`)."""

import re
from pathlib import Path

from django.apps import apps
from django.conf import settings

from tenants.models import Membership, Organization


def tenant_models():
    owned = [m for m in apps.get_models() if any(f.name == "organization" for f in m._meta.get_fields())]
    return {Organization, Membership, *owned}


def test_views_and_api_never_query_tenant_models_directly():
    names = "|".join(sorted(m.__name__ for m in tenant_models()))
    forbidden = re.compile(rf"\b({names})\.objects\.(get|filter|all|exclude|first|last)\(")
    offenders = []
    for path in Path(settings.BASE_DIR).glob("*/*.py"):
        # cluster_views.py, cluster_api.py and the like are views and API modules too.
        if path.name.endswith(("views.py", "api.py")) and ".venv" not in path.parts:
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                if forbidden.search(line):
                    offenders.append(f"{path.relative_to(settings.BASE_DIR)}:{number}: {line.strip()}")
    assert not offenders, "Query tenant data through tenants.access / for_org():\n" + "\n".join(offenders)


def test_the_rule_knows_the_tenant_models():
    assert {"Organization", "Membership"} <= {m.__name__ for m in tenant_models()}
