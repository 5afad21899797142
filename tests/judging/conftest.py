"""Fixtures the judging tests share."""
from unittest import mock

import pytest

from judging import ratings


@pytest.fixture
def bt_calls():
    """Counts Bradley-Terry computations (each board's one call of ``ratings.leaderboard``)."""
    with mock.patch.object(ratings, "leaderboard", wraps=ratings.leaderboard) as spy:
        yield spy
