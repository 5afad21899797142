"""python manage.py set_reference MODEL"""
from django.core.management.base import BaseCommand, CommandError

from judging.services.responses import ReferenceUnknown, reference_model_set
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Mark MODEL as the human-verified reference that leaderboards measure win rates "
            "against (e.g. VisIT-Bench's 'human_verified_reference'); the previous reference "
            "becomes an ordinary model. No response or judgment changes.")

    def add_arguments(self, parser):
        parser.add_argument("model", help="The model's name, as on the leaderboard")
        add_study_argument(parser)

    def handle(self, *args, model, **opts):
        study = study_option(opts)
        try:
            reference = reference_model_set(model, study=study)
        except ReferenceUnknown as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{reference.name} is now the reference model of {study.slug}.")
