"""Crash-test harness: gunicorn on its own PostgreSQL database, annotators that retry over HTTP,
and the database invariants read back afterwards.

Why not bench/load.py as is: that benchmark measures a healthy server and gives up on the first
error; the crash tests need clients that survive dropped connections and 5xx answers (retrying
against a deadline, as a browser user would), and checks that look for half-written rows, not
only totals. The database is read with plain SQL so the test process never touches its own
Django connection.

``python -m tests.support.http_load seed ANNOTATORS TASKS N`` (with ``DATABASE_URL`` set) builds
the tables from the models (no migrations: the lead generates them), the annotators with ready
sessions, and an active pairwise batch of stored comparisons — so each counted submit also writes
a Judgment inside the submit transaction — and prints ``{"batch": …, "sessions": […]}``.
"""
import asyncio
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from tests.support.sockets import socket_owners

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = ROOT / ".venv" / "bin" / "gunicorn"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
# A stored submit answers with the next task's page (200), or with a redirect to "next" when
# the batch has nothing left for the annotator (302). Refusals are 4xx, an outage 503.
ACKNOWLEDGED = (200, 302)
ACTION = re.compile(r'<form method="post" id="hit-form"[^>]*action="([^"]+)"', re.S)
DONE = ("submitted", "approved", "rejected")
SECRET = "crash-tests-only"


def pg_bin() -> Path | None:
    """The newest PostgreSQL server binaries on this machine, or ``None``."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return found[-1].parent if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def server_env(db_url: str) -> dict:
    """Production settings (config.settings, DEBUG off) on ``db_url`` with pooled connections."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO_", "CELERY_", "GUNICORN_"))
           and k not in ("DATABASE_URL", "CACHE_URL")}
    env.update(DATABASE_URL=db_url, SECRET_KEY=SECRET, DEBUG="0", SESSION_COOKIE_SECURE="0",
               CSRF_COOKIE_SECURE="0", ALLOWED_HOSTS="127.0.0.1",
               DJANGO_SETTINGS_MODULE="config.settings", DATABASE_CONN_MAX_AGE="60",
               LOG_LEVEL="WARNING", PYTHONPATH=str(ROOT))
    return env


@contextmanager
def scratch_database(server_url: str, name: str):
    """An empty database ``name`` on the server of ``server_url``, dropped afterwards."""
    import psycopg

    admin = with_database(server_url, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(server_url, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def seed(db_url: str, *, annotators: int, tasks: int, n: int, timeout: float = 60) -> dict:
    """Tables, annotators and an active batch in the (empty) database ``db_url``."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.http_load", "seed", str(annotators), str(tasks),
         str(n)], cwd=ROOT, env=server_env(db_url), capture_output=True, text=True,
        timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"seeding failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def choice_for(assignment_uuid: str) -> str:
    """The answer a simulated annotator gives, derived from the assignment so the database's
    stored answer can be checked against what was sent (whoever sent it, however often)."""
    return "AB"[int(assignment_uuid.replace("-", "")[-1], 16) % 2]


class ThrowAwayPostgres:
    """A private PostgreSQL cluster in a temporary directory on a free port, for tests that stop
    and restart the server — which must never happen to the shared test server. Same flags as
    scripts/services.sh; as root the binaries run as the ``postgres`` user (initdb refuses root).
    """

    def __init__(self):
        self.bin = pg_bin()
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="crash-pg-"))
        self.data = self.dir / "data"

    def _run(self, *args: str, timeout: float = 60) -> None:
        command = shlex.join([str(self.bin / args[0]), *args[1:]])
        if os.geteuid() == 0:
            argv = ["su", "postgres", "-s", "/bin/sh", "-c", command]
        else:
            argv = ["/bin/sh", "-c", command]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"{args[0]} {args[1:3]} failed: {result.stderr[-2000:]}\n"
                               f"{self.log_tail()}")

    def log_tail(self, chars: int = 2000) -> str:
        log = self.dir / "server.log"
        return log.read_text(errors="replace")[-chars:] if log.exists() else ""

    def __enter__(self):
        self.dir.chmod(0o755)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        try:
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                      "-E", "UTF8")
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if (self.data / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop",
                          timeout=30)
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, name: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def _options(self) -> str:
        return (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "server.log"), "-w",
                  "-t", "30", "-o", self._options(), "start")

    def stop(self) -> None:
        """Fast shutdown: open transactions are rolled back, client connections cut."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop")

    def restart(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "server.log"), "-m",
                  "fast", "-w", "-t", "30", "-o", self._options(), "restart")


# --------------------------------------------------------------------------------- gunicorn


class Gunicorn:
    """A gunicorn master with ``config/gunicorn.py`` on a free loopback port.

    The app is preloaded in the master, URL modules included (``warm_application``), so a
    killed worker is replaced by a fork in milliseconds instead of a multi-second cold import;
    the request path is the production one.
    """

    def __init__(self, env: dict, *, workers: int, log_path: Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.log_path = log_path
        self.env = {**env, "GUNICORN_BIND": f"127.0.0.1:{self.port}",
                    "GUNICORN_WORKERS": str(workers), "GUNICORN_TIMEOUT": "30"}
        self.proc: subprocess.Popen | None = None

    def __enter__(self):
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [str(GUNICORN), "-c", "config/gunicorn.py", "--preload", "--no-control-socket",
                 "tests.support.http_load:warm_application()"], cwd=ROOT,
                env=self.env, stdout=log, stderr=subprocess.STDOUT)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self) -> None:
        """SIGTERM the master (it stops accepting and respawning), then SIGKILL its workers:
        a graceful worker exit takes seconds of interpreter teardown the tests don't need."""
        if self.proc is None or self.proc.poll() is not None:
            return
        workers = self.worker_pids()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            for pid in workers:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:  # the master's own teardown: no children are left
            self.proc.kill()
            self.proc.wait(timeout=5)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def wait_ready(self, timeout: float = 30) -> None:
        """Until the login page answers and every worker is up (the master forks them)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{self.log_tail()}")
            try:
                ok = httpx.get(self.base + "/accounts/login/", timeout=2).status_code == 200
            except httpx.HTTPError:
                ok = False
            if ok and len(self.worker_pids()) == self.workers:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn not ready in {timeout} s:\n{self.log_tail()}")
            time.sleep(0.05)

    def worker_pids(self) -> set[int]:
        """Live children of the master: the workers."""
        pids = set()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid and fields[0] != "Z":
                pids.add(int(stat.parent.name))
        return pids

    def busy_workers(self) -> set[int]:
        """Workers holding an accepted client connection right now, i.e. serving a request."""
        return socket_owners(self.worker_pids(), lambda local, _, state: local == self.port
                             and state == "01")  # ESTABLISHED

    def worker_with_local_port(self, port: int) -> int | None:
        """The worker whose outgoing socket (e.g. to PostgreSQL) has local port ``port``."""
        owners = socket_owners(self.worker_pids(), lambda local, _, __: local == port)
        return owners.pop() if len(owners) == 1 else None


async def until(predicate, timeout: float, what: str, *, interval: float = 0.02):
    """Wait until ``predicate()`` is truthy (returns it), failing the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(interval)
    return result


@contextmanager
def seeded_server(db_url: str, *, workers: int, log_path: Path, **seed_kwargs):
    """Seed ``db_url`` and boot gunicorn on it at the same time (booting needs no tables);
    yields (server, seeded)."""
    with ThreadPoolExecutor(1) as pool:
        seeding = pool.submit(seed, db_url, **seed_kwargs)
        with Gunicorn(server_env(db_url), workers=workers, log_path=log_path) as server:
            yield server, seeding.result()


def run_async(coroutine_function):
    """``asyncio.run(coroutine_function())`` in a thread of its own: in a full test session
    Playwright's sync API leaves an event loop running in the main thread, where asyncio.run
    refuses to start."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(coroutine_function())).result()


def warm_application():
    """config.wsgi's application with the URL conf (and so every view module) imported."""
    from django.db import connections
    from django.urls import get_resolver

    from config.wsgi import application

    get_resolver().url_patterns  # noqa: B018 - the import is the point
    connections.close_all()  # forked workers must never share a connection of the master
    return application


# --------------------------------------------------------------------------------- clients


@dataclass
class Ledger:
    """What the clients saw: acknowledged submits, every failure by kind, retried submits."""

    acknowledged: dict[str, str] = field(default_factory=dict)  # assignment uuid -> choice sent
    failures: Counter = field(default_factory=Counter)  # "503", "RemoteProtocolError", …
    failure_log: list[tuple[float, str, str]] = field(default_factory=list)  # (time, kind, what)
    retried_submits: set[str] = field(default_factory=set)
    unexpected: list[str] = field(default_factory=list)
    bodies: dict[str, str] = field(default_factory=dict)  # first body seen per status code

    def fail(self, kind: str, what: str) -> None:
        self.failures[kind] += 1
        self.failure_log.append((time.monotonic(), kind, what))


class GaveUp(Exception):
    """A request kept failing until the deadline."""


class Annotator:
    """One logged-in annotator: next task → task page → POST the answer → the page the
    redirect names, until all done.

    A request that dies (connection dropped, 5xx) is retried after a short pause until the
    deadline: the same POST with the same CSRF token, which the server must treat as the same
    submission. ``last`` keeps the latest (form action, token) so a test can replay it.
    """

    def __init__(self, base: str, session_key: str, batch: str, ledger: Ledger, deadline: float):
        self.client = httpx.AsyncClient(base_url=base, timeout=20)
        self.client.cookies.set("sessionid", session_key, domain=urlsplit(base).hostname)
        self.batch = batch
        self.ledger = ledger
        self.deadline = deadline
        self.last: tuple[str, str] | None = None

    async def send(self, method: str, url: str, *, retry: bool = True,
                   **kw) -> tuple[httpx.Response | None, int]:
        """The response (``None`` if the last try died) and how many tries it took."""
        attempts, pause = 0, 0.02
        while True:
            attempts += 1
            response = None
            try:
                response = await self.client.request(method, url, **kw)
            except httpx.TransportError as exc:
                self.ledger.fail(type(exc).__name__, f"{method} {url}")
            else:
                if response.status_code < 500:
                    return response, attempts
                self.ledger.bodies.setdefault(str(response.status_code), response.text[:1000])
                self.ledger.fail(str(response.status_code), f"{method} {url}")
            if not retry:
                return response, attempts
            if time.monotonic() + pause > self.deadline:
                raise GaveUp(f"{method} {url}: still failing at the deadline")
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.25)

    async def open_task(self, url: str | None = None) -> tuple[str, str] | None:
        """Load a task page (by default claim via "next") and return (form action, CSRF
        token); ``None`` when the batch has nothing left for this annotator."""
        url = url or f"/work/batch/{self.batch}/next/"
        page, _ = await self.send("GET", url, follow_redirects=True)
        return task_form(page)

    async def submit(self, action: str, token: str, *, retry: bool = True):
        """POST the answer; the next task's page or a redirect is the acknowledgement."""
        uuid = action.rstrip("/").split("/")[-1]
        self.last = (action, token)
        answer, attempts = await self.send(
            "POST", action, retry=retry,
            data={"choice": choice_for(uuid), "csrfmiddlewaretoken": token})
        if attempts > 1:
            self.ledger.retried_submits.add(uuid)
        if answer is not None and answer.status_code in ACKNOWLEDGED:
            self.ledger.acknowledged[uuid] = choice_for(uuid)
        elif retry:
            raise GaveUp(f"submit {answer.status_code}: {answer.text[:300]}")
        return answer, attempts

    async def run(self) -> None:
        try:
            opened = await self.open_task()
            while opened is not None:
                answer, _ = await self.submit(*opened)
                # a stored submit answers with the next task's page; the last one redirects
                opened = (task_form(answer) if answer.status_code == 200
                          else await self.open_task(answer.headers["location"]))
        except GaveUp as exc:
            self.ledger.unexpected.append(str(exc))

    async def aclose(self) -> None:
        await self.client.aclose()


# --------------------------------------------------------------------------------- invariants


def task_form(page) -> tuple[str, str] | None:
    """(form action, CSRF token) of a task page; ``None`` for the "All done" page."""
    if "All done" in page.text:
        return None
    match, token = ACTION.search(page.text), CSRF.search(page.text)
    if page.status_code != 200 or not match or not token:
        raise GaveUp(f"task page {page.status_code}: {page.text[:300]}")
    return match.group(1), token.group(1)


def check_invariants(db_url: str, batch: str) -> dict:
    """Read the batch back with plain SQL; every list in the answer must be empty.

    - slots: ``Task.slots_taken`` equals its live leases plus counted submissions, within N;
    - half_written: a submitted assignment has answer, submitted_at and seconds_spent; any other
      has none of them and is not counted;
    - judgments: a counted submission of a stored comparison has exactly one human Judgment with
      the submitted choice; nothing else has any;
    - answers: the stored choice is the one the client sent;
    - duplicates: at most one assignment per (task, worker).
    Also returns ``done`` (assignment uuid → status for submitted ones) and per-task counts.
    """
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as conn:
        (batch_id,) = conn.execute(
            "SELECT id FROM annotation_batch WHERE uuid = %s", [batch]).fetchone()
        tasks = conn.execute("""
            SELECT t.id, t.slots_taken, t.max_assignments,
                   count(a.id) FILTER (WHERE a.status = 'leased'),
                   count(a.id) FILTER (WHERE a.status = ANY(%s) AND a.counted)
            FROM annotation_task t LEFT JOIN annotation_assignment a ON a.task_id = t.id
            WHERE t.batch_id = %s GROUP BY t.id""", [list(DONE), batch_id]).fetchall()
        rows = conn.execute("""
            SELECT a.uuid::text, a.status, a.counted, a.answer ->> 'choice',
                   a.submitted_at IS NOT NULL, a.seconds_spent IS NOT NULL, a.answer IS NOT NULL,
                   count(j.id), min(j.choice), max(j.choice)
            FROM annotation_assignment a LEFT JOIN judging_judgment j ON j.assignment_id = a.id
            WHERE a.batch_id = %s GROUP BY a.id""", [batch_id]).fetchall()
        leased = conn.execute("""
            SELECT a.uuid::text, u.username, a.claimed_at FROM annotation_assignment a
            JOIN annotation_worker w ON w.id = a.worker_id JOIN auth_user u ON u.id = w.user_id
            WHERE a.batch_id = %s AND a.status = 'leased'""", [batch_id]).fetchall()
        duplicates = conn.execute("""
            SELECT task_id, worker_id FROM annotation_assignment WHERE batch_id = %s
            GROUP BY task_id, worker_id HAVING count(*) > 1""", [batch_id]).fetchall()
    slots = [t for t in tasks if t[1] != t[3] + t[4] or t[1] > t[2] or t[4] > t[2]]
    half, judgments, answers, done = [], [], [], {}
    for uuid, status, counted, choice, has_at, has_spent, has_answer, n_j, j_min, j_max in rows:
        if status in DONE:
            done[uuid] = status
            if not (has_at and has_spent and has_answer):
                half.append((uuid, status, "submitted without answer/submitted_at/seconds"))
            if choice != choice_for(uuid):
                answers.append((uuid, choice))
            if counted and (n_j != 1 or j_min != choice or j_max != choice):
                judgments.append((uuid, n_j, j_min, j_max))
            if not counted and n_j:
                judgments.append((uuid, "uncounted with judgments", n_j))
        else:
            if has_at or has_spent or has_answer or counted:
                half.append((uuid, status, "unsubmitted with answer fields or counted"))
            if n_j:
                judgments.append((uuid, status, "judgment without a submission", n_j))
    statuses = Counter(r[1] for r in rows)
    return {"slots": slots, "half_written": half, "statuses": dict(statuses), "leased": leased, "judgments": judgments, "answers": answers,
            "duplicates": duplicates, "done": done,
            "counted_per_task": [t[4] for t in tasks], "max_per_task": [t[2] for t in tasks]}


def assert_invariants(db_url: str, batch: str, ledger: Ledger, *, complete: bool) -> dict:
    state = check_invariants(db_url, batch)
    for key in ("slots", "half_written", "judgments", "answers", "duplicates"):
        assert state[key] == [], f"{key}: {state[key][:10]}"
    lost = set(ledger.acknowledged) - set(state["done"])
    assert not lost, f"acknowledged but not stored: {sorted(lost)[:10]}"
    if complete:
        assert state["counted_per_task"] == state["max_per_task"], (
            f"batch not completed: {sum(state['counted_per_task'])} of "
            f"{sum(state['max_per_task'])} counted, {len(ledger.acknowledged)} acknowledged, "
            f"statuses {state['statuses']}, leased {state['leased']}")
        assert len(state["done"]) == sum(state["max_per_task"])
    return state


# --------------------------------------------------------------------------------- seeding


def _seed_main(annotators: int, tasks: int, n: int) -> None:
    import django

    django.setup()
    from django.apps import apps
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    SessionStore = import_module(settings.SESSION_ENGINE).SessionStore
    settings.MIGRATION_MODULES = {app.label: None for app in apps.get_app_configs()}
    call_command("migrate", run_syncdb=True, verbosity=0)
    from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
    from tests.judging.judges.conftest import make_comparison, make_models

    group, _ = Group.objects.get_or_create(name="annotator")
    sessions = []
    for i in range(annotators):
        user = User.objects.create_user(f"crash{i}")  # no password: sessions made here
        user.groups.add(group)
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]  # the user-loading one (axes only counts)
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.save()
        sessions.append(session.session_key)
    model_a, model_b = make_models("crash-model-a", "crash-model-b")
    rows = [{"comparison": str(make_comparison(model_a, model_b).uuid)} for _ in range(tasks)]
    batch = batch_create_from_rows(hit_type="pairwise_ab", title="Crash test",
                                   rows=rows, assignments_per_task=n, min_seconds=0)
    batch_set_status(batch, "active")
    print(json.dumps({"batch": str(batch.uuid), "sessions": sessions}))


if __name__ == "__main__":
    if sys.argv[1:2] != ["seed"]:
        sys.exit("usage: python -m tests.support.http_load seed ANNOTATORS TASKS N")
    _seed_main(*(int(a) for a in sys.argv[2:5]))
