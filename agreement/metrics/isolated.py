"""The metrics that import NLTK (METEOR, ROUGE-L's Porter stemmer), scored in a fresh Python
process: NLTK's import is ~105 MB and METEOR's WordNet ~135 MB more, which a worker caching
the metrics of 1M judgments (or a report reading them) would otherwise hold to its end.

``MetricProcess`` starts ``python -m agreement.metrics.isolated`` (a new interpreter, not a
fork of a large parent) on first use and talks to it through its stdin/stdout, pickled
request by request: a metric's settings, or a chunk of candidates and references to score,
answered with the same floats the metric computes in-process. An error in the child is
raised here (the child's own exception when it pickles, e.g. ``WordNetMissing``, else
``MetricProcessError``), with the child's traceback as a note. Pure Python, no Django.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from .registry import Reference

PROJECT_DIR = Path(__file__).resolve().parents[2]
CHUNK = 1000  # pairs sent per request: the child never holds more than one chunk's texts
# Installed packages NLTK's import loads when present, though neither METEOR nor ROUGE-L
# uses them (SciPy, and scikit-learn with pandas and pyarrow): the child blocks them, so NLTK
# takes ~50 MB instead of ~200 MB there. Its scores are tested equal to the in-process ones.
NOT_NEEDED = ("scipy", "sklearn")


class MetricProcessError(RuntimeError):
    """The metric process failed (or died) and its error could not be passed back as is."""


class MetricProcess:
    """One child process for the NLTK metrics, started on first use; ``close()`` (or leaving
    the ``with`` block) ends it, and a later use starts a new one."""

    def __init__(self):
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> MetricProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def settings(self, name: str, options: dict) -> dict:
        """The metric's ``settings(options)``, computed where it runs (METEOR's read NLTK)."""
        return self._ask("settings", name, options)

    def score(self, name: str, candidates: Sequence[str], references: Sequence[Reference],
              **options) -> list[float]:
        """The metric's scores of the pairs, sent ``CHUNK`` pairs at a time."""
        if len(candidates) != len(references):
            raise ValueError(f"{len(candidates)} candidates but {len(references)} references: "
                             "they must pair up")
        out: list[float] = []
        for start in range(0, len(candidates), CHUNK):
            out += self._ask("score", name, list(candidates[start:start + CHUNK]),
                             [r if isinstance(r, str) else list(r)
                              for r in references[start:start + CHUNK]], options)
        return out

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()  # the child's loop ends on EOF
            proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            proc.stdout.close()

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PROJECT_DIR), env.get("PYTHONPATH", "")) if p)
        return subprocess.Popen([sys.executable, "-m", "agreement.metrics.isolated"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                cwd=PROJECT_DIR)

    def _ask(self, *request):
        if self._proc is None:
            self._proc = self._start()
        try:
            pickle.dump(request, self._proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self._proc.stdin.flush()
            status, payload, trace = pickle.load(self._proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            try:
                code = self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
            self.close()
            raise MetricProcessError(
                f"the metric process ({request[0]} {request[1]}) exited unexpectedly "
                f"(exit code {code})") from exc
        if status == "ok":
            return payload
        error = payload if isinstance(payload, BaseException) else MetricProcessError(payload)
        error.add_note(f"in the metric process ({request[0]} {request[1]}):\n{trace}")
        raise error


def _answer(request) -> object:
    from . import get  # registers every metric

    op, name, *args = request
    if op == "settings":
        return get(name).settings(*args)
    candidates, references, options = args
    return [float(s) for s in get(name).fn(candidates, references, **options)]


def main() -> None:
    """The child's loop: a request per pickle on stdin, (status, result, traceback) on stdout;
    anything else written to stdout (a library's print) goes to stderr instead."""
    for name in NOT_NEEDED:
        sys.modules.setdefault(name, None)  # importing it raises ImportError
    reply = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    requests = sys.stdin.buffer
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        try:
            answer = ("ok", _answer(request), "")
        except Exception as exc:  # noqa: BLE001  passed back to the caller, who raises it
            trace = traceback.format_exc()
            try:
                pickle.loads(pickle.dumps(exc))
                answer = ("error", exc, trace)
            except Exception:  # noqa: BLE001
                answer = ("error", f"{type(exc).__name__}: {exc}", trace)
        pickle.dump(answer, reply, protocol=pickle.HIGHEST_PROTOCOL)
        reply.flush()


if __name__ == "__main__":
    main()
