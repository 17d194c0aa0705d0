from django.db import migrations, models


class Migration(migrations.Migration):
    """A column with a constant default: PostgreSQL adds it without rewriting the table."""

    dependencies = [
        ("symfonic_django", "0006_start_run_permission"),
    ]

    operations = [
        migrations.AddField(
            model_name="pause",
            name="search_text",
            field=models.TextField(blank=True, default="", editable=False),
        ),
    ]
