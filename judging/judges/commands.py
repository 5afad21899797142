"""``--judge NAME [--judge-version V]`` for the management commands that act on one judge."""
from django.core.management.base import CommandError

from .models import Judge
from .selectors import judge_named


def judge_option(options: dict) -> Judge:
    judge = judge_named(options["judge"], options.get("judge_version"))
    if judge is None:
        raise CommandError(f"no judge named {options['judge']!r}")
    return judge
