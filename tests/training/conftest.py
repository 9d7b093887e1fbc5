import pytest

from tests.factories import ActiveAllocationFactory, CapacityPoolFactory, WorkloadFactory, instance_type


@pytest.fixture
def p5_workload(org, catalog):
    """A dense 8B model on 64 H100s (DP 64) with a P5 allocation of 8 instances: peak 989 TFLOP/s a GPU."""
    pool = CapacityPoolFactory(instance_type=instance_type("p5.48xlarge"))
    allocation = ActiveAllocationFactory(organization=org, pool=pool, instance_count=8)
    return WorkloadFactory(organization=org, allocation=allocation, parameter_count=8 * 10**9, data_parallel=64)
