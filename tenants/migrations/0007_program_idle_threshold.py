from decimal import Decimal

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tenants", "0006_api_tokens")]

    operations = [
        migrations.AddField(
            model_name="program",
            name="idle_threshold",
            field=models.DecimalField(
                decimal_places=2,
                default=Decimal("0.50"),
                help_text="A fraction: 0.50 flags organizations that ran less than half of what they were allocated.",
                max_digits=3,
                validators=[
                    django.core.validators.MinValueValidator(Decimal("0")),
                    django.core.validators.MaxValueValidator(Decimal("1")),
                ],
                verbose_name="idle below utilization",
            ),
        ),
    ]
