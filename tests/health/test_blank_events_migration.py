"""Migration 0022 resolves the events DCGM's blanks opened before they were read as "no reading"."""

import importlib

import pytest
from django.apps import apps

from tests.factories import HealthEventFactory
from workloads.health.models import HealthEvent

pytestmark = pytest.mark.django_db
migration = importlib.import_module("workloads.migrations.0022_dcgm_unsupported")


def test_events_opened_by_a_blank_are_resolved_and_real_ones_stay_open():
    false = HealthEventFactory(kind="ecc_dbe_volatile", code=None, gpu=2,
                               message="GPU 2: 9.22337e+18 double-bit ECC errors since the driver loaded")  # fmt: skip
    rows = HealthEventFactory(kind="remapped_rows_uncorrectable", code=None, gpu=1,
                              message="GPU 1: 2.14748e+09 memory rows remapped after uncorrectable errors")  # fmt: skip
    real = HealthEventFactory(kind="ecc_dbe_volatile", code=None, gpu=3,
                              message="GPU 3: 2 double-bit ECC errors since the driver loaded")  # fmt: skip
    xid = HealthEventFactory(gpu=4, code=79)
    migration.resolve_events_opened_by_blanks(apps, None)
    resolved = dict(HealthEvent.objects.values_list("pk", "resolved_at"))
    assert resolved[false.pk] is not None and resolved[rows.pk] is not None
    assert resolved[real.pk] is None and resolved[xid.pk] is None
