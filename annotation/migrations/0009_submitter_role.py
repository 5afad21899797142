"""The submitter role: a group, like the annotator and analyst roles."""
from django.db import migrations


def create_role(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name="submitter")


class Migration(migrations.Migration):
    dependencies = [("annotation", "0008_webhooks")]
    operations = [migrations.RunPython(create_role, migrations.RunPython.noop)]
