"""matplotlib's configuration folder is kept between processes (its font list is built once),
but only a folder that is really ours: a symlink, someone else's or a group-writable folder is
refused for a private temporary one."""
import os
import stat
import subprocess
import sys
from pathlib import Path

from annotation.core import pyplot


def test_a_new_folder_is_made_private(tmp_path):
    path = tmp_path / "mpl"
    assert pyplot._own_folder(str(path)) == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_an_existing_private_folder_is_kept(tmp_path):
    path = tmp_path / "mpl"
    path.mkdir(mode=0o700)
    assert pyplot._own_folder(str(path)) == str(path)


def test_a_symlink_or_an_open_folder_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    assert pyplot._own_folder(str(link)) not in (str(link), str(target))
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    other = pyplot._own_folder(str(shared))
    assert other != str(shared) and Path(other).is_dir()
    assert stat.S_IMODE(Path(other).stat().st_mode) == 0o700


def test_a_second_process_finds_the_font_list_the_first_one_built(tmp_path):
    """The point of keeping the folder: only the first process pays for the font list."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("MPLCONFIGDIR", None)
    code = ("from annotation.core.pyplot import pyplot, config_dir; pyplot(); "
            "print(config_dir())")
    def run():
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=Path(__file__).resolve().parents[2])
        return Path(out.stdout.strip())

    folder = run()
    assert folder.parent == tmp_path
    (font_list,) = folder.glob("fontlist-*.json")
    built = font_list.stat().st_mtime_ns
    assert run() == folder
    assert font_list.stat().st_mtime_ns == built  # read, not rebuilt
