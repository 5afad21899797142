"""Settings: one module, every production difference comes from the environment.

Embedded defaults (SQLite file, eager Celery, local file storage) make a bare laptop work;
``DEBUG`` is off unless asked for and a missing ``SECRET_KEY`` then stops start-up.
Every variable read here is documented in ``.env.example`` and the README.
"""
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_decimal, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set and DEBUG is off. Set SECRET_KEY in the environment "
            "(see .env.example), or DEBUG=1 for local development."
        )
    SECRET_KEY = "insecure-development-only-key"  # DEBUG only, never served in production

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc assets, served from our static (offline)
    "axes",  # failed sign-in lockout (annotation.core.lockout)
    "studies",  # below every app: each may import it, it imports none
    "annotation",
    "judging",
    "agreement",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",  # after sessions, before common (Django's order)
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "annotation.core.middleware.ContentSecurityPolicyMiddleware",
    "axes.middleware.AxesMiddleware",  # a locked-out sign-in → 429 (annotation.core.lockout)
    "annotation.core.outage.DatabaseUnavailableMiddleware",  # last: DB outage → 503, not a bare 500
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # A marketplace's pages' templates live in its subpackage (annotation/providers/<name>/
        # templates/), found without naming it here.
        "DIRS": [BASE_DIR / "templates",
                 *sorted(BASE_DIR.glob("annotation/providers/*/templates"))],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.core.context_processors.roles",
                "studies.context_processors.current_study",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
    )
}
# Ping a pooled connection before reusing it: after a database restart the first request of
# each worker would otherwise fail on its dead connection (tests/integration/test_crash_database).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env_bool("DATABASE_CONN_HEALTH_CHECKS", True)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "config.postgresql"  # the same, with a cheaper ping
    # The one switch for prepared statements: the hot-path statements (annotation.core.sql)
    # are prepared once per connection, in production, tests and DEBUG alike; the ORM's own
    # queries never are (Django binds their parameters client-side). Off (psycopg's
    # prepare_threshold None) behind a pooler that cannot keep them (PgBouncer in transaction
    # mode without max_prepared_statements), or with a connection per request (CONN_MAX_AGE 0:
    # preparing then only adds a round trip); the same statements then run unprepared.
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = (
        0 if env_bool("DATABASE_PREPARED_STATEMENTS", True) else None)
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Wait for the writer lock instead of failing at once; SQLite serializes claims.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    # An index's INCLUDE columns (judgment_study_time's ``rejected``) are PostgreSQL's; SQLite
    # builds the index without them, as intended.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# A shared cache (Redis) when CACHE_URL is set: sessions are then read from it and written
# through to the database (no session query per request, nothing lost if the cache is flushed).
# Unset, each process keeps a local-memory cache and sessions stay in the database.
CACHE_URL = env_str("CACHE_URL")
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "config.redis_cache.ReusingRedisCache",
                          "LOCATION": CACHE_URL, "KEY_PREFIX": "vlmeval"}}
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Axes first: it refuses a locked-out account or address before any password is checked.
# Then the same checks as Django's ModelBackend, loading roles with the user in one query.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "annotation.core.auth_backend.RoleAwareBackend"]

# --- Failed sign-ins (django-axes; annotation/core/lockout.py) ------------------------------
# LOGIN_FAILURE_LIMIT failed passwords for one account, or failed passwords / API tokens from
# one address, lock it for LOGIN_LOCKOUT_MINUTES (0 = until an admin unlocks it: Admin → Axes
# → Access attempts, or `manage.py axes_reset_username NAME` / `axes_reset_ip IP`).
AXES_ENABLED = env_bool("LOGIN_LOCKOUT", True)
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
if AXES_FAILURE_LIMIT < 1:
    raise ImproperlyConfigured(f"LOGIN_FAILURE_LIMIT={AXES_FAILURE_LIMIT} must be at least 1")
_LOCKOUT_MINUTES = env_float("LOGIN_LOCKOUT_MINUTES", 15.0)
if _LOCKOUT_MINUTES < 0:
    raise ImproperlyConfigured(f"LOGIN_LOCKOUT_MINUTES={_LOCKOUT_MINUTES} must not be negative")
AXES_COOLOFF_TIME = timedelta(minutes=_LOCKOUT_MINUTES) if _LOCKOUT_MINUTES else None
AXES_LOCKOUT_PARAMETERS = "annotation.core.lockout.lockout_parameters"  # account + address
AXES_CLIENT_IP_CALLABLE = "annotation.core.lockout.client_ip"
AXES_USERNAME_CALLABLE = "annotation.core.lockout.client_username"  # cut to what axes stores
AXES_LOCKOUT_CALLABLE = "annotation.core.lockout.lockout_response"  # 429 + Retry-After
AXES_RESET_ON_SUCCESS = False  # a valid login must not wipe an address's failures
AXES_DISABLE_ACCESS_LOG = True  # failures are kept; successful logins are not logged
AXES_VERBOSE = False  # no start-up banner on every command; failures still log WARNING
# Proxies in front that append to X-Forwarded-For (the client is the entry they added).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 1 if env_bool("BEHIND_HTTPS_PROXY") else 0)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "annotation:home"
LOGOUT_REDIRECT_URL = "logged_out"
# Password-reset e-mails: printed on the console unless an SMTP (or other) backend is set.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "VLM Eval <noreply@localhost>")

LANGUAGE_CODE = "en-us"
# The annotator's pages are translated (locale/); a worker's browser language picks one
# (LocaleMiddleware), English otherwise.
LANGUAGES = [("en", "English"), ("fr", "Français")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "var" / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(BASE_DIR / "var" / "media")))
# S3 (or any S3-compatible store) for images and exports when S3_BUCKET is set; local files
# otherwise. Credentials come from the standard AWS environment or instance profile.
S3_BUCKET = env_str("S3_BUCKET")
_DEFAULT_STORAGE = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
if S3_BUCKET:
    _DEFAULT_STORAGE = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": S3_BUCKET,
            "region_name": env_str("S3_REGION") or None,
            "endpoint_url": env_str("S3_ENDPOINT_URL") or None,
            "custom_domain": env_str("S3_CUSTOM_DOMAIN") or None,
            "location": env_str("S3_PREFIX", "media"),
            "default_acl": None,
            "querystring_auth": env_bool("S3_SIGNED_URLS", True),
            "file_overwrite": False,
        },
    }
STORAGES = {
    "default": _DEFAULT_STORAGE,
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# --- Celery: eager when no broker is configured -------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", CELERY_BROKER_URL)
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
# Redis holding the API rate limits every process shares (annotation.core.rate_limit).
# Default: the broker when it is Redis; empty = each process paces itself (embedded setup).
_BROKER_IS_REDIS = CELERY_BROKER_URL.startswith(("redis://", "rediss://", "unix://"))
RATE_LIMIT_REDIS_URL = env_str("RATE_LIMIT_REDIS_URL", CELERY_BROKER_URL if _BROKER_IS_REDIS else "")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
# Separate queues so a long judge run never starves marketplace sync or lease expiry.
CELERY_TASK_ROUTES = {
    "judging.judges.*": {"queue": "judges"},
    "agreement.tasks.*": {"queue": "metrics"},
    "annotation.providers.tasks.*": {"queue": "providers"},
    "annotation.webhooks.*": {"queue": "providers"},  # outbound calls, like the marketplaces'
}
# Expensive jobs (report builds, metric runs, judge runs) queued or running at once: per person
# and in all (annotation.core.jobs); past either a start is refused (API: 429 + Retry-After).
JOBS_MAX_PER_USER = env_int("JOBS_MAX_PER_USER", 2)
JOBS_MAX_GLOBAL = env_int("JOBS_MAX_GLOBAL", 4)
JOBS_RETRY_AFTER = env_int("JOBS_RETRY_AFTER", 60)  # seconds, the refusal's Retry-After
if min(JOBS_MAX_PER_USER, JOBS_MAX_GLOBAL, JOBS_RETRY_AFTER) < 1:
    raise ImproperlyConfigured("JOBS_MAX_PER_USER, JOBS_MAX_GLOBAL and JOBS_RETRY_AFTER must be "
                               "at least 1")
CELERY_BEAT_SCHEDULE = {
    "expire-leases": {"task": "annotation.tasks.expire_leases", "schedule": 60.0},
    "finish-completed-batches": {"task": "annotation.tasks.finish_completed_batches",
                                 "schedule": 60.0},
}

# --- Security -------------------------------------------------------------------------------
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_HTTPS_PROXY", False) else None
)
X_FRAME_OPTIONS = "DENY"
# Only task pages may be framed, and only by these origins (MTurk's ExternalQuestion iframe).
TASK_FRAME_ANCESTORS = env_list(
    "TASK_FRAME_ANCESTORS", ["https://www.mturk.com", "https://workersandbox.mturk.com"]
)

# --- REST API ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotation.core.lockout.LockoutTokenAuthentication",  # wrong tokens count (axes)
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["annotation.core.permissions.IsAdmin"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # ?limit= at most annotation.core.rest.MAX_PAGE_SIZE (clamped); JSON bodies at most
    # MAX_JSON_DEPTH deep (400 beyond).
    "EXCEPTION_HANDLER": "annotation.core.rest.exception_handler",  # JobsBusy -> 429
    "DEFAULT_PAGINATION_CLASS": "annotation.core.rest.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_PARSER_CLASSES": [
        "annotation.core.rest.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "VLM crowd-evaluation API",
    "VERSION": "1",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},  # no swagger.io call
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "BatchStatusEnum": "annotation.models.engine.Batch.Status",
        "AssignmentStatusEnum": "annotation.models.engine.Assignment.Status",
        "JudgeRunStatusEnum": "judging.judges.models.JudgeRun.Status",
        "JobStatusEnum": "agreement.models.Report.Status",  # MetricRun shares these choices
    },
}

# --- Platform -------------------------------------------------------------------------------
PUBLIC_BASE_URL = env_str("PUBLIC_BASE_URL", "http://127.0.0.1:8000")
DEFAULT_LEASE_SECONDS = env_int("DEFAULT_LEASE_SECONDS", 30 * 60)
AUTO_BLOCK_MIN_GOLD = env_int("AUTO_BLOCK_MIN_GOLD", 5)
# Votes in a batch a worker needs before block_unreliable may block them by estimated reliability.
AUTO_BLOCK_RELIABILITY_MIN_VOTES = env_int("AUTO_BLOCK_RELIABILITY_MIN_VOTES", 20)
# Matches a model needs before a leaderboard ranks it (below: listed as provisional, no rank),
# like the Chatbot Arena's "preliminary" mark.
LEADERBOARD_MIN_MATCHES = env_int("LEADERBOARD_MIN_MATCHES", 30)
if LEADERBOARD_MIN_MATCHES < 0:
    raise ImproperlyConfigured("LEADERBOARD_MIN_MATCHES must be 0 or more")
# While votes arrive, a board of at least LEADERBOARD_STALE_MIN_JUDGMENTS judgments is served
# up to LEADERBOARD_STALE_SECONDS and LEADERBOARD_STALE_SHARE of its judgments behind while one
# refresh runs in the background (judging.board_refresh); the page says how far behind. Smaller
# boards cost little to recompute in the request and always show the last vote.
LEADERBOARD_STALE_SECONDS = env_float("LEADERBOARD_STALE_SECONDS", 30.0)
LEADERBOARD_STALE_SHARE = env_float("LEADERBOARD_STALE_SHARE", 0.01)
LEADERBOARD_STALE_MIN_JUDGMENTS = env_int("LEADERBOARD_STALE_MIN_JUDGMENTS", 10_000)
# ... and refreshed once it is this many seconds behind (at every vote, a core would do nothing else).
LEADERBOARD_REFRESH_SECONDS = env_float("LEADERBOARD_REFRESH_SECONDS", 10.0)
if not (0 <= LEADERBOARD_REFRESH_SECONDS <= LEADERBOARD_STALE_SECONDS
        and 0 <= LEADERBOARD_STALE_SHARE <= 1):
    raise ImproperlyConfigured("Need 0 <= LEADERBOARD_REFRESH_SECONDS <= LEADERBOARD_STALE_SECONDS "
                               "and LEADERBOARD_STALE_SHARE between 0 and 1")
IMAGE_MAX_BYTES = env_int("IMAGE_MAX_BYTES", 10 * 1024 * 1024)
IMAGE_MAX_PIXELS = env_int("IMAGE_MAX_PIXELS", 40_000_000)
IMAGE_FETCH_TIMEOUT = env_float("IMAGE_FETCH_TIMEOUT", 10.0)
# A batch upload larger than this is refused before a row of it is parsed (the product's wizard).
BATCH_UPLOAD_MAX_BYTES = env_int("BATCH_UPLOAD_MAX_BYTES", 10 * 1024 * 1024)
# The wizard fetches every distinct image URL of an upload (at most this many, in parallel
# threads, each within UPLOAD_IMAGE_CHECK_TIMEOUT seconds) and lists the broken ones.
UPLOAD_IMAGE_CHECK_MAX = env_int("UPLOAD_IMAGE_CHECK_MAX", 500)
UPLOAD_IMAGE_CHECK_TIMEOUT = env_float("UPLOAD_IMAGE_CHECK_TIMEOUT", 5.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # one line per HTTP request is noise at INFO; failures still surface as WARNING
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}

# --- Benchmark construction: LLM reference step and pipeline ---------------------------------
# Any OpenAI-compatible chat-completions endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp).
# Unset LLM_BASE_URL = the reference step waits (instances stay in the 'reference' stage).
LLM_BASE_URL = env_str("LLM_BASE_URL")
LLM_API_KEY = env_str("LLM_API_KEY")
LLM_MODEL = env_str("LLM_MODEL", "gpt-4o")
LLM_TIMEOUT = env_float("LLM_TIMEOUT", 60.0)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 3)
LLM_PRICE_IN_PER_1K = env_float("LLM_PRICE_IN_PER_1K", 0.0)
LLM_PRICE_OUT_PER_1K = env_float("LLM_PRICE_OUT_PER_1K", 0.0)
LLM_REFERENCE_MAX_TOKENS = env_int("LLM_REFERENCE_MAX_TOKENS", 600)
LLM_REFERENCE_TEMPERATURE = env_float("LLM_REFERENCE_TEMPERATURE", 0.0)
PIPELINE_CAPTION_ASSIGNMENTS = env_int("PIPELINE_CAPTION_ASSIGNMENTS", 1)
PIPELINE_VERIFICATION_ASSIGNMENTS = env_int("PIPELINE_VERIFICATION_ASSIGNMENTS", 1)
# Test-only escape hatch for the SSRF-safe fetcher; deliberately not read from the environment.
IMAGE_FETCH_ALLOW_LOOPBACK = False

# --- Crowd marketplaces: MTurk and Prolific providers ------------------------------------------
# MTurk credentials come from the standard AWS environment / instance profile, never the database.
MTURK_PRODUCTION = env_bool("MTURK_PRODUCTION", False)  # sandbox unless set AND confirmed per launch
MTURK_REGION = env_str("MTURK_REGION", "us-east-1")
MTURK_ENDPOINT_URL = env_str("MTURK_ENDPOINT_URL")  # override; default derived from the mode
MTURK_MAX_ATTEMPTS = env_int("MTURK_MAX_ATTEMPTS", 6)  # all attempts, botocore's standard retries
PROLIFIC_API_TOKEN = env_str("PROLIFIC_API_TOKEN")  # env only
PROLIFIC_BASE_URL = env_str("PROLIFIC_BASE_URL", "https://api.prolific.com/api/v1/")
PROLIFIC_COMPLETE_URL = env_str(
    "PROLIFIC_COMPLETE_URL", "https://app.prolific.com/submissions/complete"
)
PROLIFIC_FEE_RATE = env_float("PROLIFIC_FEE_RATE", 0.3333)  # service fee on rewards and bonuses
PROLIFIC_TIMEOUT = env_float("PROLIFIC_TIMEOUT", 20.0)
PROLIFIC_MAX_ATTEMPTS = env_int("PROLIFIC_MAX_ATTEMPTS", 4)  # idempotent calls only
PROLIFIC_WORKSPACE_ID = env_str("PROLIFIC_WORKSPACE_ID")  # groups, counts, pay recommendations
PROLIFIC_CURRENCY = env_str("PROLIFIC_CURRENCY", "GBP")  # the workspace's currency (ISO 4217)
# Hourly floor and recommendation used when Prolific's reward-recommendations cannot be asked
PROLIFIC_MIN_HOURLY = env_decimal("PROLIFIC_MIN_HOURLY", "6.00")
PROLIFIC_RECOMMENDED_HOURLY = env_decimal("PROLIFIC_RECOMMENDED_HOURLY", "9.00")
PROLIFIC_HOOK_SECRET = env_str("PROLIFIC_HOOK_SECRET")  # env only; empty: hooks are refused
PROLIFIC_HOOK_TOLERANCE = env_int("PROLIFIC_HOOK_TOLERANCE", 300)  # seconds; older is a replay
PROVIDER_SYNC_SECONDS = env_float("PROVIDER_SYNC_SECONDS", 300.0)
CELERY_IMPORTS = [
    "annotation.engine.tasks", "annotation.providers.tasks", "annotation.pipeline.tasks",
    "judging.judges.tasks", "annotation.webhooks.tasks",
]
CELERY_BEAT_SCHEDULE["webhooks-retry"] = {"task": "annotation.webhooks.retry_due", "schedule": 30.0}
# --- Money bounds (annotation.core.money): every reward, bonus, budget, cap and fee rate is
# refused above these (and above what its column stores) with an error naming the setting.
# Neither MTurk nor Prolific publishes a maximum reward or bonus; both take whole cents.
MAX_REWARD_USD = env_decimal("MAX_REWARD_USD", "100")  # per assignment
MAX_BONUS_USD = env_decimal("MAX_BONUS_USD", "100")  # per bonus
MAX_BATCH_BUDGET_USD = env_decimal("MAX_BATCH_BUDGET_USD", "100000")  # per batch, fees included
MAX_JUDGE_BUDGET_USD = env_decimal("MAX_JUDGE_BUDGET_USD", "10000")  # per judge run
MAX_FEE_RATE = env_decimal("MAX_FEE_RATE", "1")  # a marketplace's fee as a fraction (1 = 100 %)
# --- Webhooks: signed event notifications (secrets named per endpoint, read from the environment)
WEBHOOK_TIMEOUT = env_float("WEBHOOK_TIMEOUT", 10.0)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 8)  # 30 s … 6 h apart: about a day
# Test-only, like IMAGE_FETCH_ALLOW_LOOPBACK: receivers on this machine; never from the environment.
WEBHOOK_ALLOW_LOOPBACK = False
# --- Public submissions of new models (judging.submissions)
# The study every row made before studies existed belongs to (and old URLs serve).
DEFAULT_STUDY_SLUG = env_str("DEFAULT_STUDY_SLUG", "default")
SUBMISSION_JUDGE = env_str("SUBMISSION_JUDGE", "")  # a pairwise judge's name; empty: closed
SUBMISSION_BUDGET_CAP = env_float("SUBMISSION_BUDGET_CAP", 5.0)  # dollars per submission
SUBMISSION_MAX_BYTES = env_int("SUBMISSION_MAX_BYTES", 20 * 1024 * 1024)
SUBMISSION_MAX_ROWS = env_int("SUBMISSION_MAX_ROWS", 5000)
SUBMISSIONS_PER_DAY = env_int("SUBMISSIONS_PER_DAY", 5)
CELERY_BEAT_SCHEDULE["provider-sync"] = {
    "task": "annotation.providers.tasks.sync_all", "schedule": PROVIDER_SYNC_SECONDS,
}
# --- Vote quality (annotation.engine): what a batch accepts by default and what gets flagged
# A new batch's minimum seconds, as a share of its HIT type's expected time (``expected_seconds``).
MIN_SECONDS_SHARE = env_float("MIN_SECONDS_SHARE", 0.2)
# Reports fit Dawid–Skene and MACE to the human votes up to this many votes (above: a note).
REPORT_WORKER_MODELS_MAX_VOTES = env_int("REPORT_WORKER_MODELS_MAX_VOTES", 50_000)
# The worker page fits Dawid–Skene over the votes of the batches the worker voted in, newest
# first, up to this many votes (Dawid–Skene fits 20,000 votes in about 0.2 s).
WORKER_RELIABILITY_MAX_VOTES = env_int("WORKER_RELIABILITY_MAX_VOTES", 20_000)
# Flags on submitted answers (annotation.engine.services.quality), shown on the review pages.
# too_fast: seconds spent below this share of the batch's median, once this many answers count.
FLAG_FAST_SHARE = env_float("FLAG_FAST_SHARE", 0.3)
FLAG_MIN_SAMPLES = env_int("FLAG_MIN_SAMPLES", 5)
# paste_heavy: pasted characters at least this share of the free text's length.
FLAG_PASTE_SHARE = env_float("FLAG_PASTE_SHARE", 0.5)
# near_duplicate: shingle (Jaccard) similarity at least this, against at most
# FLAG_DUPLICATE_CANDIDATES of the batch's latest other answers (plus the HIT type's own texts).
FLAG_DUPLICATE_SIMILARITY = env_float("FLAG_DUPLICATE_SIMILARITY", 0.8)
FLAG_DUPLICATE_CANDIDATES = env_int("FLAG_DUPLICATE_CANDIDATES", 100)
