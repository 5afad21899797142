"""The default study: what every row made before studies belongs to (DEFAULT_STUDY_SLUG)."""
from django.conf import settings
from django.db import migrations


def create_default(apps, schema_editor):
    Study = apps.get_model("studies", "Study")
    slug = settings.DEFAULT_STUDY_SLUG
    Study.objects.get_or_create(
        slug=slug, defaults={"name": slug.replace("-", " ").capitalize() or "Default"})


class Migration(migrations.Migration):
    dependencies = [("studies", "0001_initial")]
    # Reversing keeps the study: the scoped apps' reversals drop their columns first.
    operations = [migrations.RunPython(create_default, migrations.RunPython.noop)]
