"""Where the shared real data lives: ``shared/data`` beside the checkout, wherever it is (a git
worktree may sit one folder deeper than the main checkout)."""
from pathlib import Path

_HERE = Path(__file__).resolve()
SHARED_DATA = next((p / "shared" / "data" for p in _HERE.parents[2:]
                    if (p / "shared" / "data").is_dir()), _HERE.parents[3] / "shared" / "data")
