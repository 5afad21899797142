"""``--study`` for management commands that act on one study's data."""
from django.core.management.base import CommandError

from .models import Study
from .selectors import UnknownStudy, study_for_command


def add_study_argument(parser) -> None:
    parser.add_argument("--study", metavar="SLUG",
                        help="The study (default: the only one; required when there are several)")


def study_option(options: dict) -> Study:
    try:
        return study_for_command(options.get("study"))
    except UnknownStudy as exc:
        raise CommandError(str(exc)) from exc
