"""Sessions people signed in to (to end them from outside), whether a provider verified a sign-in's email address, and usernames unique without regard to case (an
invitation could register "Manager" beside staff "manager": an expression index, on PostgreSQL and SQLite alike)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from portal.migration_ops import create_index_sql


class Migration(migrations.Migration):
    atomic = False  # the index is built concurrently on PostgreSQL (portal/migration_ops.py)

    dependencies = [
        ("tenants", "0017_capacity_plan"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="oidcidentity",
            name="email_verified",
            field=models.BooleanField(default=False, verbose_name="email verified by the provider"),
        ),
        migrations.AlterField(
            model_name="oidcidentity",
            name="issuer",
            field=models.CharField(max_length=1024, verbose_name="issuer"),
        ),
        migrations.AlterField(
            model_name="oidcidentity",
            name="subject",
            field=models.CharField(max_length=1024, verbose_name="subject"),
        ),
        migrations.CreateModel(
            name="SignInSession",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("session_key", models.CharField(max_length=40, unique=True, verbose_name="session")),
                ("provider", models.CharField(blank=True, max_length=40, verbose_name="provider")),
                (
                    "sid",
                    models.CharField(blank=True, db_index=True, max_length=255, verbose_name="provider's session id"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="signed in")),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="sign_in_sessions",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "signed-in session",
                "verbose_name_plural": "signed-in sessions",
            },
        ),
        create_index_sql(
            "CREATE UNIQUE INDEX auth_user_username_lower_uniq ON auth_user (LOWER(username))",
            name="auth_user_username_lower_uniq",
        ),
    ]
