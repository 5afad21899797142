"""matplotlib for servers and workers: the Agg backend (no display), and a configuration
folder of our own that survives the process.

matplotlib writes its font list to its configuration folder. A fresh folder per process (what
a private temporary folder gives) rebuilds that list in every web worker and report job, about
a second each; a folder kept per user under the temporary directory builds it once. The folder
must be ours: a path in a shared directory that is a symlink or belongs to someone else is
refused, and a private temporary folder is used instead.
"""
import os
import stat
import tempfile
import threading

_lock = threading.Lock()
_config_dir: str | None = None


def config_dir() -> str:
    """The folder matplotlib is told to use (``MPLCONFIGDIR``, unless the environment set it)."""
    global _config_dir
    with _lock:
        if _config_dir is None:
            _config_dir = os.environ.get("MPLCONFIGDIR") or (_own_folder(
                os.path.join(tempfile.gettempdir(), f"vlm-eval-mpl-{os.getuid()}"))
                if hasattr(os, "getuid") else tempfile.mkdtemp(prefix="mpl-"))
            os.environ.setdefault("MPLCONFIGDIR", _config_dir)
        return _config_dir


def _own_folder(path: str) -> str:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return tempfile.mkdtemp(prefix="mpl-")
    info = os.lstat(path)
    if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
            or stat.S_IMODE(info.st_mode) & 0o077):
        return tempfile.mkdtemp(prefix="mpl-")
    return path


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend, configured as above."""
    config_dir()
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt
