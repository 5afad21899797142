"""Print the calls, tokens and cost a judge run would need (cached calls are free)."""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from judging.judges.commands import judge_option
from judging.judges.services import default_items, judge_estimate


class Command(BaseCommand):
    help = "Estimate the cost of running a judge over comparisons or responses."

    def add_arguments(self, parser):
        parser.add_argument("--judge", required=True)
        parser.add_argument("--judge-version")
        parser.add_argument("--items", nargs="*", default=[])

    def handle(self, *args, **opts):
        judge = judge_option(opts)
        try:
            e = judge_estimate(judge=judge, item_uuids=opts["items"] or default_items(judge))
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"{judge.ident}: {e.units} units · {e.calls} new calls "
                          f"({e.cached_calls} already paid) · ~{e.prompt_tokens} prompt + "
                          f"{e.completion_tokens} completion tokens · estimated cost {e.cost} "
                          "(extraction fallbacks not included)")
