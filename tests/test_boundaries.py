"""Zulip's rule, made strict: request-facing code never reaches tenant rows except through the gate
(`get_org_access_or_404`, `visible_organizations`, `<Model>.objects.for_org()/visible_to()`).

Two checks. The first reads the source of every request-facing module, however deep it sits (views, API,
forms, serializers, filters, template tags, context processors): a tenant model's manager used for anything
but `for_org`, `visible_to` or `none`, on one line or spread over several, and `get_object_or_404(Model, …)`
on a tenant model both fail. The second imports every module and inspects the classes themselves: a filter,
form field or serializer field that offers or accepts tenant objects must start empty (`.none()`, narrowed per
request in `__init__`) or take a callable (django-filter calls it with the request) — so the fields that
django-filter and DRF generate from `Meta.fields` are caught too, not only the ones written by hand.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import django_filters
import pytest
from django import forms
from django.apps import apps
from django.conf import settings
from django.db.models import QuerySet
from rest_framework import serializers

from tenants.models import Membership, Organization

PROJECT_PACKAGES = ("portal", "tenants", "workloads")
# Modules that answer requests. Services, tasks and commands act on ids they were handed by code that
# already went through the gate (or on behalf of the system), so they may query by primary key.
REQUEST_FACING = {"views", "api", "forms", "serializers", "filters", "context_processors", "pages"}
GATE_METHODS = {"for_org", "visible_to", "none"}
MANAGERS = {"objects", "_default_manager", "_base_manager"}
GETTERS_404 = {"get_object_or_404", "get_list_or_404"}


def tenant_models() -> set[type]:
    owned = [m for m in apps.get_models() if any(f.name == "organization" for f in m._meta.get_fields())]
    return {Organization, Membership, *owned}


def project_files() -> list[Path]:
    base = Path(settings.BASE_DIR)
    return sorted(
        path
        for package in PROJECT_PACKAGES
        for path in (base / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def is_request_facing(path: Path) -> bool:
    stem = path.stem
    return (
        stem in REQUEST_FACING
        or stem.endswith(("_views", "_api"))
        or "views" in path.parts
        or "templatetags" in path.parts
    )


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def unscoped_uses(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each tenant-model query that bypasses the gate in `source`."""
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        # Model.objects.<anything but the gate>, however the chain is laid out over lines.
        if (
            isinstance(node, ast.Attribute)
            and node.attr in MANAGERS
            and isinstance(node.value, ast.Name)
            and node.value.id in names
        ):
            parent = parents.get(node)
            gated = (
                isinstance(parent, ast.Attribute)
                and parent.attr in GATE_METHODS
                and isinstance(parents.get(parent), ast.Call)
            )
            if not gated:
                used = f".{parent.attr}" if isinstance(parent, ast.Attribute) else ""
                found.append((node.lineno, f"{node.value.id}.{node.attr}{used}"))
        # get_object_or_404(Model, pk=…): fetches from the whole table.
        if isinstance(node, ast.Call) and node.args:
            func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            first = node.args[0]
            if func in GETTERS_404 and isinstance(first, ast.Name) and first.id in names:
                found.append((node.lineno, f"{func}({first.id}, …)"))
    return found


def test_request_facing_code_never_queries_tenant_models_directly():
    names = {m.__name__ for m in tenant_models()}
    offenders = []
    for path in project_files():
        if not is_request_facing(path):
            continue
        for line, what in unscoped_uses(path.read_text(), names):
            offenders.append(f"{path.relative_to(settings.BASE_DIR)}:{line}: {what}")
    assert not offenders, "Query tenant data through tenants.access / for_org() / visible_to():\n" + "\n".join(
        offenders
    )


@pytest.mark.parametrize(
    "source",
    [
        "Workload.objects.filter(pk=1)",
        "Workload.objects.all()",
        "(\n    Workload.objects\n    .select_related('organization')\n    .get(pk=pk)\n)",
        "get_object_or_404(Workload, pk=pk)",
        "get_object_or_404(Workload.objects, pk=pk)",
        "field = forms.ModelChoiceField(queryset=Workload.objects.all())",
        "Workload._default_manager.get(pk=1)",
    ],
)
def test_the_lint_catches(source):
    assert unscoped_uses(source, {"Workload"}), source


@pytest.mark.parametrize(
    "source",
    [
        "Workload.objects.for_org(org).filter(pk=1)",
        "Workload.objects.visible_to(user).get(pk=pk)",
        "(\n    Workload.objects\n    .visible_to(user)\n    .get(pk=pk)\n)",
        "queryset = Workload.objects.none()",
        "get_object_or_404(Workload.objects.visible_to(user), pk=pk)",
        "InstanceType.objects.all()",
    ],
)
def test_the_lint_lets_the_gate_through(source):
    assert not unscoped_uses(source, {"Workload"}), source


def test_the_lint_reads_nested_packages():
    # Guards the scan itself: sub-packages (workloads/clusters/views.py and the like) are read too.
    facing = [p for p in project_files() if is_request_facing(p)]
    assert any(len(p.relative_to(settings.BASE_DIR).parts) > 2 for p in facing), facing


# --- The classes themselves: filters, form fields and serializer fields over tenant models ---------------


def _import_project_modules() -> None:
    for package_name in PROJECT_PACKAGES:
        package = importlib.import_module(package_name)
        for module in pkgutil.walk_packages(package.__path__, f"{package_name}."):
            if ".migrations" in module.name or module.name.endswith(".admin"):
                continue
            importlib.import_module(module.name)


def _project_subclasses(base: type) -> list[type]:
    found, todo = [], [base]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            if sub.__module__.split(".")[0] in PROJECT_PACKAGES and not sub.__module__.endswith(".admin"):
                found.append(sub)
    return found


def unscoped_choice(queryset, models: set[type]) -> bool:
    """A choice over tenant rows that is not empty to start with (nor a callable of the request)."""
    if queryset is None or callable(queryset) and not isinstance(queryset, QuerySet):
        return False
    return queryset.model in models and not queryset.query.is_empty()


def unscoped_fields() -> list[str]:
    _import_project_modules()
    models = tenant_models()
    offenders = []
    for filterset in _project_subclasses(django_filters.FilterSet):
        for name, flt in filterset.base_filters.items():
            choice = isinstance(flt, django_filters.ModelChoiceFilter | django_filters.ModelMultipleChoiceFilter)
            if choice and unscoped_choice(flt.extra.get("queryset"), models):
                offenders.append(f"{filterset.__module__}.{filterset.__name__}.{name} (filter)")
    for form in _project_subclasses(forms.BaseForm):
        for name, field in form.base_fields.items():
            if isinstance(field, forms.ModelChoiceField) and unscoped_choice(field.queryset, models):
                offenders.append(f"{form.__module__}.{form.__name__}.{name} (form field)")
    for serializer in _project_subclasses(serializers.BaseSerializer):
        if issubclass(serializer, serializers.ListSerializer) or serializer.__module__ == "portal.serializers":
            continue  # portal.serializers holds the bases every API serializer builds on, with no fields
        for name, field in serializer(context={}).fields.items():
            relation = getattr(field, "child_relation", field)
            writable = isinstance(relation, serializers.RelatedField) and not relation.read_only
            if writable and unscoped_choice(relation.queryset, models):
                offenders.append(f"{serializer.__module__}.{serializer.__name__}.{name} (serializer field)")
    return offenders


@pytest.mark.django_db
def test_filters_forms_and_serializers_offer_only_scoped_tenant_objects():
    offenders = unscoped_fields()
    assert not offenders, (
        "These offer or accept any organization's rows: start them empty (.none()) and narrow them to the "
        "caller's scope in __init__, or give django-filter a callable of the request:\n" + "\n".join(offenders)
    )


@pytest.mark.django_db
def test_the_class_check_catches_a_generated_filter():
    from workloads.models import Cluster

    class Leaky(django_filters.FilterSet):
        class Meta:
            model = Cluster
            fields = ["allocation"]  # django-filter makes a ModelChoiceFilter over every allocation

    Leaky.__module__ = "workloads.leaky"
    try:
        assert any("Leaky.allocation" in o for o in unscoped_fields())
    finally:
        del Leaky


def test_the_rule_knows_the_tenant_models():
    assert {"Organization", "Membership", "Workload", "Cluster", "Allocation"} <= {m.__name__ for m in tenant_models()}
