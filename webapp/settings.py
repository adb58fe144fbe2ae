"""Django settings for PerfDojo.

Embedded defaults: everything works on one machine with no external service.
State (the SQLite database, collected static files) lives in one directory,
``var/`` at the repository root unless ``DOJO_STATE_DIR`` names another; it is
created at import.  Environment overrides: DOJO_STATE_DIR, DJANGO_SECRET_KEY,
DJANGO_DEBUG (the developer flag: 1 turns Django's debug pages on; default off),
DJANGO_ALLOWED_HOSTS (comma-separated).

Production-safe by default: DEBUG is off unless DJANGO_DEBUG=1 is set; with no
DJANGO_SECRET_KEY a random key is made once per state directory (``secret_key``, mode
0600); every error under /api/ is JSON (webapp/api/errors.py); request headers are
bounded (webapp/api/limits.py).
"""
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
STATE_DIR = Path(os.environ.get("DOJO_STATE_DIR") or BASE_DIR / "var").resolve()
STATE_DIR.mkdir(parents=True, exist_ok=True)



def _install_secret_key(state: Path) -> str:
    """This installation's random key, made on first use (the state directory is private)."""
    path = state / "secret_key"
    try:
        return path.read_text().strip() or _new_key(path)
    except FileNotFoundError:
        return _new_key(path)


def _new_key(path: Path) -> str:
    import secrets
    key = secrets.token_urlsafe(50)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:                       # another process made it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or _install_secret_key(STATE_DIR)
DEBUG = os.environ.get("DJANGO_DEBUG", "0").lower() in ("1", "true", "yes", "on")
ALLOWED_HOSTS = [h.strip() for h in os.environ.get(
    "DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",") if h.strip()]

INSTALLED_APPS = [
    "daphne",                      # first: `runserver` then serves the ASGI app
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "channels",
    "webapp",
]

MIDDLEWARE = [
    "webapp.api.limits.RequestLimitsMiddleware",     # header sizes, rate limits (429)
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",   # static files under daphne (STACK.md gotcha 6)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "webapp.urls"
ASGI_APPLICATION = "webapp.asgi.application"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": STATE_DIR / "db.sqlite3",
        "CONN_MAX_AGE": 600, "CONN_HEALTH_CHECKS": True,    # kept per HTTP thread (webapp/asgi.py)
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = STATE_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)                 # WhiteNoise warns on every start without it
# Serve straight from the finders, so no collectstatic is needed on one machine.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

_LOG_LEVEL = os.environ.get("DOJO_LOG_LEVEL", "WARNING").upper()
if _LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    _LOG_LEVEL = "WARNING"


def _not_noise(record) -> bool:
    """False for warnings that say nothing here: kombu's "No hostname was supplied" on
    every connection to the embedded (file system) broker."""
    return not (record.name == "kombu.connection" and record.getMessage().startswith("No hostname was supplied"))


# Warnings and errors only, one line each with where they come from.  The server's access
# log leaves out background traffic (webapp/serve.py, DOJO_ACCESS_LOG=quiet|all|off); the
# runner and agents worker log at WARNING (DOJO_RUNNER_LOG, DOJO_AGENT_LOG).
# DOJO_LOG_LEVEL=INFO shows more.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"short": {"format": "%(levelname)s %(name)s: %(message)s"}},
    "filters": {"not_noise": {"()": "django.utils.log.CallbackFilter", "callback": _not_noise}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "short", "filters": ["not_noise"]}},
    "root": {"handlers": ["console"], "level": _LOG_LEVEL},
    "loggers": {
        # Django's INFO records (django.server, django.channels...) and daphne's
        # per-connection chatter stay out even at DOJO_LOG_LEVEL=INFO; errors go to the root
        "django": {"level": "WARNING"},
        # a refused request (4xx) already has its access-log line; a server error keeps its traceback
        "django.request": {"level": "ERROR"},
        "daphne": {"level": "WARNING"},
    },
}

# Sign-up refuses short, common, all-numeric and username-like passwords, with the reason.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Runners and jobs (webapp/runners/conf.py) -------------------------------------------
# Embedded (default): safefs:// broker in STATE_DIR/broker, in-memory channel layer,
# SQLite.  With REDIS_URL: Redis is the broker and the channel layer; with
# DATABASE_URL (postgres://user:pass@host:5432/name): PostgreSQL is the database.
from webapp.runners import conf as _runners_conf  # noqa: E402

INSTALLED_APPS += ["django.contrib.admin", "webapp.runners"]
if os.environ.get("DATABASE_URL"):
    DATABASES["default"] = _runners_conf.database_from_url(
        os.environ["DATABASE_URL"], DATABASES["default"].get("OPTIONS"))
CHANNEL_LAYERS = _runners_conf.channel_layers()
DOJO_BROKER_URL, DOJO_BROKER_OPTIONS = _runners_conf.broker(STATE_DIR)
DOJO_RUNNER_BROKER_URL = os.environ.get("DOJO_RUNNER_BROKER_URL") or None   # what runners are told
DOJO_RUNNER_BOOTSTRAP_TOKEN = os.environ.get("DOJO_RUNNER_BOOTSTRAP_TOKEN") or None  # shared, many uses
DOJO_RUNNER_HEARTBEAT = _runners_conf.number(os.environ, "DOJO_RUNNER_HEARTBEAT", 3)      # s between beats
DOJO_RUNNER_OFFLINE_AFTER = _runners_conf.number(os.environ, "DOJO_RUNNER_OFFLINE_AFTER", 15)
DOJO_REAPER_INTERVAL = _runners_conf.number(os.environ, "DOJO_REAPER_INTERVAL", 2)   # 0: no reaper in web
DOJO_REDISPATCH_AFTER = _runners_conf.number(os.environ, "DOJO_REDISPATCH_AFTER", 30)
DOJO_JOB_PENDING_TIMEOUT = _runners_conf.number(os.environ, "DOJO_JOB_PENDING_TIMEOUT", 86400)
DOJO_JOB_MAX_ATTEMPTS = int(_runners_conf.number(os.environ, "DOJO_JOB_MAX_ATTEMPTS", 3))
DOJO_JOB_TIMEOUT = _runners_conf.number(os.environ, "DOJO_JOB_TIMEOUT", 300)          # default wall limit
DOJO_JOB_MAX_TIMEOUT = _runners_conf.number(os.environ, "DOJO_JOB_MAX_TIMEOUT", 1800)

# --- Histories, editor pages, accounts and the JSON API ------------------------------------
INSTALLED_APPS += ["webapp.histories", "webapp.api", "webapp.accounts"]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
DATA_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024          # history imports; IR sources stop at 64 KiB
DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000
CSRF_FAILURE_VIEW = "webapp.api.errors.csrf_failure"   # JSON under /api/
# Bounded work: request headers, writes per client per minute, active jobs per submitter
DOJO_MAX_HEADER_BYTES = int(_runners_conf.number(os.environ, "DOJO_MAX_HEADER_BYTES", 16384))
DOJO_RATE_WRITES_PER_MIN = int(_runners_conf.number(os.environ, "DOJO_RATE_WRITES_PER_MIN", 240))
DOJO_JOB_QUOTA_ACTIVE = int(_runners_conf.number(os.environ, "DOJO_JOB_QUOTA_ACTIVE", 20))
# DOJO_TEST_HOOKS=1 routes /__test__/push/ID (the browser tests' job.update trigger)
DOJO_TEST_HOOKS = os.environ.get("DOJO_TEST_HOOKS", "") == "1"
if DOJO_TEST_HOOKS:
    ROOT_URLCONF = "webapp.urls_test"

# --- Leaderboards and library downloads (webapp/leaderboards/, no models) ------------------
INSTALLED_APPS += ["webapp.leaderboards"]

# --- Agent runs from the editor and the API (webapp/agents/) -------------------------------
# Celery tasks on the "agents" queue, run by `python -m webapp.agents.worker` (make run starts it)
INSTALLED_APPS += ["webapp.agents"]
DOJO_AGENTS_QUEUE = os.environ.get("DOJO_AGENTS_QUEUE", "agents")
DOJO_AGENT_MAX_BUDGET = int(_runners_conf.number(os.environ, "DOJO_AGENT_MAX_BUDGET", 1000))
