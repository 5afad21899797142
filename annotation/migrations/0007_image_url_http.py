"""Every stored image URL is http(s): rows written before the rule with another scheme lose the
URL (kept in fetch_error so an admin can see what it was) before the constraint is added."""
from django.db import migrations, models
from django.db.models import Q


def clear_other_schemes(apps, schema_editor):
    Image = apps.get_model("annotation", "Image")
    bad = Image.objects.exclude(Q(source_url="") | Q(source_url__istartswith="http://")
                                | Q(source_url__istartswith="https://"))
    for image in bad:
        image.fetch_error = f"refused, not an http(s) URL: {image.source_url}"[:300]
        image.source_url = ""
        image.fetch_status = "failed"
        image.save(update_fields=["source_url", "fetch_error", "fetch_status"])


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0006_one_live_lease'),
    ]

    operations = [
        migrations.RunPython(clear_other_schemes, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='image',
            constraint=models.CheckConstraint(condition=models.Q(('source_url', ''), ('source_url__istartswith', 'http://'), ('source_url__istartswith', 'https://'), _connector='OR'), name='image_url_http'),
        ),
    ]
