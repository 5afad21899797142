"""Model lines get an owner: a submitted model is owned by its submitter (filled from the
submission rows); every other model (imported by an admin, the demo's, the reference) stays
without one, which means only an admin may add versions to its line."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def owners_from_submissions(apps, schema_editor):
    EvalModel = apps.get_model("judging", "EvalModel")
    Submission = apps.get_model("judging", "Submission")
    submitter = Submission.objects.filter(model=OuterRef("pk")).values("submitter")[:1]
    EvalModel.objects.filter(submission__isnull=False).update(owner=Subquery(submitter))


class Migration(migrations.Migration):

    dependencies = [
        ('judging', '0010_response_text_may_be_empty'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='evalmodel',
            name='owner',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='owned_models', to=settings.AUTH_USER_MODEL),
        ),
        migrations.RunPython(owners_from_submissions, migrations.RunPython.noop),
    ]
