"""python manage.py set_reference MODEL"""
from django.core.management.base import BaseCommand, CommandError

from judging.services.responses import ReferenceUnknown, reference_model_set


class Command(BaseCommand):
    help = ("Mark MODEL as the human-verified reference that leaderboards measure win rates "
            "against (e.g. VisIT-Bench's 'human_verified_reference'); the previous reference "
            "becomes an ordinary model. No response or judgment changes.")

    def add_arguments(self, parser):
        parser.add_argument("model", help="The model's name, as on the leaderboard")

    def handle(self, *args, model, **opts):
        try:
            reference = reference_model_set(model)
        except ReferenceUnknown as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{reference.name} is now the reference model.")
