import json

from django.core.management.base import BaseCommand, CommandError

from judging.leaderboards import leaderboard_build, leaderboard_csv
from judging.selectors import UnknownSplit


class Command(BaseCommand):
    help = "Print a leaderboard (BT rating + CI, rank, Elo, matches, win rate vs reference)."

    def add_arguments(self, parser):
        parser.add_argument("--judge", default="human", help="'human' or a judge name")
        parser.add_argument("--split", default="all",
                            help="all, single, multi, overall, turn:1..3, category:<name>")
        parser.add_argument("--format", choices=["json", "csv"], default="csv")
        parser.add_argument("--rounds", type=int, default=1000, help="Bootstrap rounds")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--exclude-blocked", action="store_true")

    def handle(self, *args, **opts):
        try:
            board = leaderboard_build(opts["judge"], opts["split"], bootstrap_rounds=opts["rounds"],
                                      seed=opts["seed"], exclude_blocked=opts["exclude_blocked"])
        except UnknownSplit as exc:
            raise CommandError(str(exc)) from exc
        if opts["format"] == "json":
            self.stdout.write(json.dumps(board.as_dict(), indent=1))
        else:
            self.stdout.write(leaderboard_csv(board), ending="")
