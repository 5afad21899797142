"""Print a leaderboard; it is read from (or stored in) the rating cache the pages use, so with a
shared cache (Redis) a board the page computed prints at once, and the reverse."""
import json

from django.core.management.base import BaseCommand, CommandError

from judging import rating_cache
from judging.leaderboards import leaderboard_csv, score_leaderboard_csv
from judging.selectors import HUMAN, UnknownSplit
from judging.vote_aggregation import BOTH_BAD, MAJORITY, UnknownChoice
from studies.commands import add_study_argument, study_option

BOARDS = {"pairwise": (rating_cache.leaderboard, leaderboard_csv),
          "score": (rating_cache.score_leaderboard, score_leaderboard_csv)}


class Command(BaseCommand):
    help = ("Print a leaderboard: pairwise (BT rating + CI, rank, Elo, matches, win rate vs "
            "reference) or score (mean grade + CI, rank, n). JSON keeps full precision; the "
            "CSV is rounded for reading.")

    def add_arguments(self, parser):
        parser.add_argument("--judge", default=HUMAN, help=f"'{HUMAN}' or a judge name")
        parser.add_argument("--board", choices=sorted(BOARDS), default="pairwise",
                            help="pairwise verdicts, or grades (rubric 1–5, direct 0–10)")
        parser.add_argument("--split", default="all",
                            help="all, single, multi, overall, turn:1..3, category:<name>")
        parser.add_argument("--format", choices=["json", "csv"], default="csv")
        parser.add_argument("--rounds", type=int, default=1000, help="Bootstrap rounds")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--exclude-blocked", action="store_true")
        parser.add_argument("--include-trial", action="store_true",
                            help="count the votes of trial batches (left out by default)")
        parser.add_argument("--aggregation", default=MAJORITY,
                            help="pairwise: majority (every vote a match) or a reliability "
                                 "model (dawid-skene, mace: one verdict per comparison)")
        parser.add_argument("--both-bad", choices=BOTH_BAD, default=BOTH_BAD[0],
                            help="pairwise: rate a 'both bad' vote as a tie, or exclude it")
        add_study_argument(parser)

    def handle(self, *args, **opts):
        build, to_csv = BOARDS[opts["board"]]
        study = study_option(opts)
        counting = {}
        if opts["board"] == "pairwise":
            counting = {"aggregation": opts["aggregation"], "both_bad": opts["both_bad"]}
        try:
            board = build(opts["judge"], opts["split"], bootstrap_rounds=opts["rounds"],
                          seed=opts["seed"], exclude_blocked=opts["exclude_blocked"],
                          include_trial=opts["include_trial"], study=study, **counting)
        except (UnknownSplit, UnknownChoice) as exc:
            raise CommandError(str(exc)) from exc
        if opts["format"] == "json":
            self.stdout.write(json.dumps(board.as_dict(), indent=1))
        else:
            self.stdout.write(to_csv(board), ending="")
