"""Where the shared real data lives: ``../shared/data`` beside the checkout, wherever it is."""
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
