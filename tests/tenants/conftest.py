"""Capacity tests live before the test program (2027-01-01 – 2027-07-01), on one P5 pool of 127."""

from datetime import date

import pytest
import time_machine

from tests.factories import CapacityPoolFactory, ProgramFactory


@pytest.fixture
def before_the_program():
    """'Today' is 2026-12-01: every window of the program is still ahead."""
    with time_machine.travel(date(2026, 12, 1), tick=False):
        yield


@pytest.fixture
def pool(db):
    return CapacityPoolFactory(program=ProgramFactory(), total_instances=127)
