"""Fixtures of the agreement tests: the hand-computable study of ``tests/agreement/study.py``."""
import pytest

from tests.agreement.study import build_study


@pytest.fixture
def study(db):
    return build_study()
