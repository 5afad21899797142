"""The four dataset import commands through call_command: a missing file, a missing images
folder and a refused file each stop the command with the same words, and nothing is written."""
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Instance

pytestmark = pytest.mark.django_db
COMMANDS = ("import_dataset", "import_prometheus", "import_visitbench", "import_convbench")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_file_is_named(command, tmp_path):
    missing = tmp_path / "nope.data"
    with pytest.raises(CommandError, match=rf"^{missing}: no such file$"):
        call_command(command, str(missing))


@pytest.mark.parametrize("command", COMMANDS)
def test_a_refused_file_imports_nothing_and_says_so(command, tmp_path):
    bad = tmp_path / "bad.data"
    bad.write_bytes(b"\x00not a dataset\n{")
    with pytest.raises(CommandError, match=rf"^{bad}: .+ \(nothing was imported\)$"):
        call_command(command, str(bad))
    assert not Instance.objects.exists()


def test_convbench_checks_the_file_before_the_images_folder(tmp_path):
    folder = tmp_path / "no-images"
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_convbench", str(tmp_path / "nope.xlsx"), "--images", str(folder))
    workbook = tmp_path / "convbench.xlsx"
    workbook.write_bytes(b"not read")
    with pytest.raises(CommandError, match=rf"^{folder}: no such folder$"):
        call_command("import_convbench", str(workbook), "--images", str(folder))
