"""A study sits below everything it scopes: every app may import ``studies``, it imports none."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT_APPS = {"annotation", "judging", "agreement", "config"}


def test_studies_imports_no_other_project_app():
    found = []
    for path in (ROOT / "studies").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            found += [(path.name, n) for n in names if n.split(".")[0] in PROJECT_APPS]
    assert found == []
