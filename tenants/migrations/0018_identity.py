"""Whether a provider verified a sign-in's email address, and usernames unique without regard to case (an
invitation could register "Manager" beside staff "manager": an expression index, on PostgreSQL and SQLite alike)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0017_capacity_plan"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.AddField(
            model_name="oidcidentity",
            name="email_verified",
            field=models.BooleanField(default=False, verbose_name="email verified by the provider"),
        ),
        migrations.RunSQL(
            "CREATE UNIQUE INDEX auth_user_username_lower_uniq ON auth_user (LOWER(username))",
            reverse_sql="DROP INDEX auth_user_username_lower_uniq",
        ),
    ]
