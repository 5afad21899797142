"""The boards of one study in the API, ``/api/studies/<slug>/…``: the same results as the
analysts' API (``judging.api``), read for the study in the URL, by whoever may read its
public board (``studies.access.StudyBoardReader``: a 404 otherwise)."""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from studies.access import StudyBoardReader

from . import board_refresh, rating_cache
from .api import _PARAMS, _params, _rounds
from .powered_boards import UnknownJudge, judge_powered_board
from .selectors import UnknownSplit
from .style_board import STYLES, UnknownStyle, cached_style_board, check_style

_STUDY = OpenApiParameter("study_slug", str, OpenApiParameter.PATH, description="the study")


class StudyLeaderboardView(APIView):
    """A study's pairwise board: rating with CI, rank, matches, win rate vs its reference;
    with ``?style=control`` also the style-controlled ratings (length and markdown held
    equal) and the style covariates' coefficients, under ``style_control``."""

    permission_classes = [StudyBoardReader]
    build = staticmethod(rating_cache.leaderboard)

    styled = True  # the score board has no style control

    @extend_schema(parameters=[_STUDY, *_PARAMS, OpenApiParameter("rounds", int),
                               OpenApiParameter("style", str, enum=list(STYLES))],
                   responses=dict)
    @board_refresh.tells_freshness
    def get(self, request, study_slug):
        rounds = _rounds(request)
        try:
            style = check_style(request.query_params.get("style")) if self.styled else None
        except UnknownStyle as exc:
            raise ValidationError({"style": [str(exc)]}) from exc
        params = _params(request)
        try:
            board = self.build(**params, bootstrap_rounds=rounds, study=request.study)
        except UnknownSplit as exc:
            raise ValidationError({"split": [str(exc)]}) from exc
        out = board.as_dict()
        if style:
            out["style_control"] = cached_style_board(
                request.study, params["judge"], style, exclude_blocked=params["exclude_blocked"],
                include_trial=params["include_trial"])
        return Response(out)


class StudyScoreLeaderboardView(StudyLeaderboardView):
    """A study's mean grade per model with bootstrap CI for one source and split."""

    build = staticmethod(rating_cache.score_leaderboard)
    styled = False


class StudySourcesView(APIView):
    permission_classes = [StudyBoardReader]

    @extend_schema(parameters=[_STUDY], responses=dict)
    def get(self, request, study_slug):
        """The study's sources with a board (humans first), and the study itself."""
        study = request.study
        return Response({"study": {"slug": study.slug, "name": study.name,
                                   "description": study.description,
                                   "visibility": study.visibility},
                         "sources": rating_cache.leaderboard_sources(study)})


class StudyJudgePoweredView(APIView):
    """A study's judge-powered boards (``?judge=<source>``): PPI ratings with CIs, win rates
    vs the reference and mean grades beside the human-only ones, the effective number of human
    votes, and the provenance (judge, template versions, human votes used)."""

    permission_classes = [StudyBoardReader]

    @extend_schema(parameters=[_STUDY, OpenApiParameter("judge", str, required=True)],
                   responses=dict)
    def get(self, request, study_slug):
        try:
            return Response(judge_powered_board(request.study,
                                                request.query_params.get("judge", "")))
        except UnknownJudge as exc:
            raise ValidationError({"judge": [str(exc)]}) from exc
