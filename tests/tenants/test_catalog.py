from decimal import Decimal

import pytest

from tenants.models import InstancePrice, InstanceType


@pytest.mark.django_db
def test_catalog_is_seeded_from_the_data_file():
    assert set(InstanceType.objects.values_list("api_name", flat=True)) == {
        "p5.48xlarge", "p5en.48xlarge", "p4de.24xlarge", "trn1.32xlarge", "trn1n.32xlarge",
    }  # fmt: skip
    p5 = InstanceType.objects.get(api_name="p5.48xlarge")
    assert (p5.accelerators_per_instance, p5.accelerator_memory_gib, p5.peak_bf16_tflops) == (8, 80, 989)
    trn1 = InstanceType.objects.get(api_name="trn1.32xlarge")
    assert (trn1.accelerators_per_instance, trn1.accelerator_memory_gib, trn1.peak_bf16_tflops) == (16, 32, 190)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("api_name", "region", "usd"),
    [
        ("p5.48xlarge", "us-east-1", "55.04"),
        ("p5.48xlarge", "ap-northeast-1", "68.80"),
        ("p5en.48xlarge", "us-east-1", "63.296"),
        ("p5en.48xlarge", "ap-northeast-1", "79.12"),
        ("trn1.32xlarge", "us-east-1", "21.50"),
        ("trn1n.32xlarge", "us-east-1", "24.78"),
    ],
)
def test_catalog_prices(api_name, region, usd):
    price = InstancePrice.objects.get(instance_type__api_name=api_name, region=region)
    assert price.usd_per_hour == Decimal(usd)
    assert price.price_date is not None


@pytest.mark.django_db
def test_trainium_is_not_offered_in_tokyo():
    assert not InstancePrice.objects.filter(
        instance_type__api_name__startswith="trn1", region="ap-northeast-1"
    ).exists()
