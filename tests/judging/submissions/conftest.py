"""The judge fixtures (a loopback OpenAI-protocol server) for submission tests."""
from tests.judging.judges.conftest import server  # noqa: F401
