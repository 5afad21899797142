"""An analyst's adjudication is a judgment of its own kind and source (``Judgment.ADJUDICATION``):
the kind column widens for its name, and a check keeps that name for adjudications alone."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("judging", "0005_score_judgments_kind"),
    ]

    operations = [
        migrations.AlterField(
            model_name="judgment",
            name="kind",
            field=models.CharField(choices=[("pairwise", "Pairwise"), ("score", "Score"),
                                            ("feedback", "Feedback"),
                                            ("adjudication", "Adjudication")],
                                   default="pairwise", max_length=12),
        ),
        migrations.AddConstraint(
            model_name="judgment",
            constraint=models.CheckConstraint(
                condition=models.Q(models.Q(("kind", "adjudication"), ("source", "adjudication")),
                                   models.Q(models.Q(("kind", "adjudication"), _negated=True),
                                            models.Q(("source", "adjudication"), _negated=True)),
                                   _connector="OR"),
                name="adjudication_is_its_own_source"),
        ),
    ]
