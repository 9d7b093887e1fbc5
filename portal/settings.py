"""Settings for the FM Program Portal: one module, read from the environment.

Unset, everything falls back to the embedded default that `make run` uses: SQLite in WAL mode and a
Celery broker on the local filesystem, so web, worker and beat run with no server installed.
`PORTAL_PRODUCTION=True` turns DEBUG off and refuses to start without a real SECRET_KEY,
PostgreSQL and a Redis broker.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from django.utils.translation import gettext_lazy as _

from portal.environment import ENV_NAMES, env, env_bool, env_int, env_list, origins  # noqa: F401

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PORTAL_VAR_DIR", BASE_DIR / "var"))
_DEV_SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

PRODUCTION = env_bool("PORTAL_PRODUCTION", False)
DEBUG = env_bool("DEBUG", not PRODUCTION)
SECRET_KEY = env("SECRET_KEY", "" if PRODUCTION else _DEV_SECRET_KEY)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "" if PRODUCTION else "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.humanize",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "django_celery_beat",
    "axes",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "portal",
    "tenants",
    "workloads",
]

MIDDLEWARE = [
    "portal.metrics.middleware.RequestMetricsMiddleware",  # first: times and counts what the client gets (/metrics)
    # Then: a lost database connection anywhere below is a 503, and a read is tried once more (portal/database.py).
    "portal.database.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy (SECURE_CSP below) and Permissions-Policy (portal/security.py) on every response.
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "portal.security.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    # An API write's body over its limit is a 413, nested too deeply a 400, before any view or login (portal/parsers).
    "portal.parsers.BodyLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # request.user.is_verified(): whether this session passed a second factor (django-otp).
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A session signed in with an OpenID provider is checked with it again every SSO_RECHECK_MINUTES (tenants/sso/).
    "tenants.sso.recheck.SessionRecheckMiddleware",
    # A session that owes a second factor reaches only the pages that settle it (tenants/twofactor/).
    "tenants.twofactor.middleware.SecondFactorMiddleware",
    # Last, as django-axes asks: turns a lockout no view answered itself into a 429 (tenants/logins/lockout.py).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"

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
                "tenants.context_processors.access",
                "workloads.program.context_processors.staff_counts",
                "workloads.program.context_processors.tenant_counts",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'portal.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        # Web, worker and beat all write: WAL lets readers proceed during a write, and IMMEDIATE
        # takes the write lock at BEGIN so a read-then-write transaction never fails with
        # "database is locked" half way. "timeout" is the one place the busy wait is set.
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests on a file, not in memory: Django's live server shares one in-memory connection across its
    # request threads, and concurrent htmx requests then collide ("bad parameter or other API misuse").
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_portal.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery ---------------------------------------------------------------------------------
BROKER_DIR = VAR_DIR / "broker"
# The filesystem broker takes no host; naming one keeps kombu from warning "No hostname was supplied" each time.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", "filesystem://localhost/")
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's filesystem transport: no server needed. It loses the message of a task running when the
    # worker is killed (the reconcilers send such work again), so it is for the embedded default only.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # Above the longest task run and the longest retry backoff (600 s), else Redis redelivers. Short socket
    # timeouts: a request that publishes while Redis is unreachable gives up in seconds, not minutes.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600, "socket_connect_timeout": 2, "socket_timeout": 5}
# --- Cache: the usage charts' HTML and the API's per-minute budgets (portal/throttling.py) -----------------------
# Every web process must count against the same budget: production shares Redis (CACHE_URL, by default the
# broker's server, under its own key prefix), `make run` a folder under var/ (scripts/run-embedded sets it), and
# a single process (tests, manage.py) its own memory.
_SHARED_BROKER = PRODUCTION and CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
CACHE_URL = env("CACHE_URL", CELERY_BROKER_URL if _SHARED_BROKER else "locmem://")


def cache_settings(url: str) -> dict:
    if url.startswith(("redis://", "rediss://")):
        # Redis down is a miss, never an error (portal/cache.py).
        return {"BACKEND": "portal.cache.ForgivingRedisCache", "LOCATION": url, "KEY_PREFIX": "portal"}
    if url.startswith("file://"):
        return {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": url[len("file://") :]}
    if url == "locmem://":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    raise ImproperlyConfigured(f"CACHE_URL must be redis://…, file:///folder or locmem://, not {url!r}.")


CACHES = {"default": cache_settings(CACHE_URL)}

# Publishing happens after a request's transaction commits (portal.queue); when the broker is down it tries
# twice (a refused connection fails at once; a host that does not answer costs the connect timeout each time),
# then leaves the work to the reconcilers (beat), never failing the request.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
CELERY_BROKER_CONNECTION_TIMEOUT = 3
# Long cluster tasks acknowledge late: a worker takes one message per slot, so a heartbeat (or an email) never
# waits behind messages another slot prefetched while it is busy for minutes.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Polls have their own queue (and, in docker-compose, their own worker): provisioning and email never wait
# behind a poll cycle, and a slow cloud endpoint can hold up polls only.
CELERY_TASK_ROUTES = {
    "workloads.cluster_tasks.poll_clusters": {"queue": "polls"},
    "workloads.cluster_tasks.poll_cluster_batch": {"queue": "polls"},
}
WORKER_QUEUES = ("celery", "polls")
CELERY_TASK_ACKS_LATE = False  # opted into per task, only where a rerun is safe
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TIMEZONE = "UTC"
# django_celery_beat's database scheduler, noting every 2 s that beat is alive (deep health: workloads.operations).
CELERY_BEAT_SCHEDULER = "workloads.operations.beat:Scheduler"
CELERY_BEAT_SCHEDULE: dict = {
    # Clusters in flight or in service: status, nodes, health and run intervals (fanned out in batches).
    "poll-clusters": {"task": "workloads.cluster_tasks.poll_clusters", "schedule": 60.0},
    # Self-healing: work whose message was lost (a killed worker, a broker down at publish time) is sent again.
    # Every 15 s: a killed worker's clusters are re-sent within their lease (45 s) plus this, one query a run.
    "reconcile-clusters": {"task": "workloads.clusters.reconcile", "schedule": 15.0},
    "resend-case-notifications": {"task": "workloads.support.resend_notifications", "schedule": 60.0},
    # Each queue's heartbeat: /healthz tells whether a worker is taking work from it, and how late.
    **{
        f"heartbeat-{queue}": {
            "task": "workloads.operations.heartbeat",
            "schedule": 30.0,
            "args": [queue],
            "options": {"queue": queue, "expire_seconds": 600},  # django_celery_beat's name for `expires`
        }
        for queue in WORKER_QUEUES
    },
    # What clusters report: reporters silent for three intervals are marked, their running jobs "state unknown".
    "check-reporters": {"task": "workloads.reporting.check_reporters", "schedule": 60.0},
    # GPU health from Prometheus (DCGM exporter series), two queries per source.
    "poll-gpu-telemetry": {
        "task": "workloads.health.poll_gpu_telemetry",
        "schedule": env_int("GPU_TELEMETRY_SECONDS", 120),
    },
    # Allocations move scheduled → active → expired as program days pass.
    "refresh-allocation-statuses": {"task": "tenants.tasks.refresh_allocation_statuses", "schedule": 3600.0},
    # Usage rollups: today's allocated time grows, yesterday closes (polls also roll up what they saw).
    "refresh-usage": {"task": "workloads.usage.refresh_current_days", "schedule": 600.0},
    # Sends last week's usage digest once, from Monday 09:00 program time (hourly: a missed hour still sends).
    "weekly-usage-digest": {"task": "workloads.usage.send_weekly_digest", "schedule": 3600.0},
    # What AWS billed each org account (Cost Explorer settles late: the last two weeks are re-read).
    "fetch-billed-costs": {"task": "workloads.usage.fetch_billed_costs", "schedule": 6 * 3600.0},
    # Outcomes: measured milestones met by their tokens, and budget alerts against spend and forecast.
    "follow-milestones": {"task": "workloads.outcomes.follow_milestones", "schedule": 600.0},
    "check-budgets": {"task": "workloads.outcomes.check_budgets", "schedule": 3600.0},
    # The funding body's reports: last month's from the 1st, the cycle's after its last day (each once).
    "generate-reports": {"task": "workloads.outcomes.generate_reports", "schedule": 3600.0},
    # The cycle review: its admins reminded weekly until each organization has confirmed (checked daily).
    "remind-cycle-reviews": {"task": "workloads.outcomes.remind_cycle_reviews", "schedule": 86400.0},
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Cluster work (workloads.clusters.reconcile): how long a provisioning or deletion task may run, how long
# queued work may wait for a worker, and how late either may be before the reconciler sends it again (a case
# email is sent again after the wait plus the grace too). The time limit travels in each message, so the
# process that sends a task sets it: give web, worker and beat the same value.
CLUSTER_TASK_TIME_LIMIT = env_int("CLUSTER_TASK_TIME_LIMIT", 300)
CLUSTER_QUEUE_WAIT = env_int("CLUSTER_QUEUE_WAIT", 120)
RECONCILE_GRACE = env_int("RECONCILE_GRACE", 60)
# A running provisioning attempt renews its lease on the cluster every heartbeat; one whose lease ran out (its
# worker was killed, or lost the database) is sent again by the reconciler's next run, without the grace.
# Three heartbeats to a lease: a database outage of 30 s (the heartbeat cannot write) is not taken for a death.
CLUSTER_HEARTBEAT_SECONDS = env_int("CLUSTER_HEARTBEAT_SECONDS", 15)
CLUSTER_LEASE_SECONDS = env_int("CLUSTER_LEASE_SECONDS", 45)
if not 0 < 2 * CLUSTER_HEARTBEAT_SECONDS <= CLUSTER_LEASE_SECONDS:
    raise ImproperlyConfigured("CLUSTER_LEASE_SECONDS must cover two heartbeats (CLUSTER_HEARTBEAT_SECONDS) at least.")
# Dates a program can mean (rate card, estimates, requests, allocations, usage ranges, review weeks) lie within
# its cycle, or this many days around it (tenants.cycle); anything else is a 400 / form error naming the field.
PROGRAM_DATE_MARGIN_DAYS = env_int("PROGRAM_DATE_MARGIN_DAYS", 366)
# The cycle review (workloads.outcomes.review) opens this many days before the program's last day.
CYCLE_REVIEW_DAYS = env_int("CYCLE_REVIEW_DAYS", 30)
# The capacity planner's default time limit (seconds) for the solver; a plan may ask for another (0.5–30 s).
CAPACITY_PLAN_TIME_LIMIT = float(env("CAPACITY_PLAN_TIME_LIMIT", "2"))

# --- AWS ------------------------------------------------------------------------------------
# boto3 honours AWS_ENDPOINT_URL for every client; `make run` points it at the local emulator.
AWS_ENDPOINT_URL = env("AWS_ENDPOINT_URL")
# `make run`: the endpoint is the local emulator, which records its requests to keep its state across restarts.
AWS_EMULATOR = env_bool("AWS_EMULATOR", False)
AWS_DEFAULT_REGION = env("AWS_DEFAULT_REGION", "us-east-1")

# --- Auth -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out login before the password is checked. Then passwords (refused for all
# but break-glass accounts when LOCAL_PASSWORD_LOGIN is False) and OpenID Connect (idle unless configured).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "tenants.logins.backends.LocalPasswordBackend",
    "tenants.sso.backend.OidcBackend",
]
LOGIN_URL = "login"

# --- Sign-in: the institutions' providers and passwords (portal/identity_settings.py) ----------------------
from portal.identity_settings import *  # noqa: E402, F403

# --- Failed-login limits (django-axes; tenants/logins/) -------------------------------------------
# LOGIN_FAILURE_LIMIT failures for one username, or from one client address, each within LOGIN_LOCKOUT_MINUTES
# of the one before, lock that username or address for LOGIN_LOCKOUT_MINUTES. Attempts during a lockout are
# refused (the right password too) and do not extend it; a successful login does not reset the count (a
# login to an account of one's own would otherwise wipe the address's count against someone else's).
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks
AXES_RESET_ON_SUCCESS = False
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_ENABLE_ACCESS_FAILURE_LOG = True  # one row per failure, "locked out" on the one that locks: the audit trail
AXES_CLIENT_IP_CALLABLE = "tenants.logins.lockout.client_address"
AXES_LOCKOUT_CALLABLE = "tenants.logins.lockout.lockout_response"
AXES_VERBOSE = False  # no banner on every start; portal.logins logs each lockout
# Behind that many proxies, the client address is read from X-Forwarded-For (0: the connection's address).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Password reset by email (tenants/logins/reset.py) ----------------------------------------------
# The link in the email works once, for this long (Django's PasswordResetTokenGenerator).
PASSWORD_RESET_TIMEOUT = env_int("PASSWORD_RESET_MINUTES", 60) * 60
# Reset emails asked for within an hour: per client address (more is a 429 page), per email address (more are
# answered with the same page as ever, and no email, so nobody learns whether an account exists).
PASSWORD_RESET_ADDRESS_LIMIT = env_int("PASSWORD_RESET_ADDRESS_LIMIT", 10)
PASSWORD_RESET_EMAIL_LIMIT = env_int("PASSWORD_RESET_EMAIL_LIMIT", 3)

# --- Second factor for staff accounts (django-otp; tenants/twofactor/) --------------------------------------
# True: program staff, Django staff and superusers set up an authenticator app on their next login and enter a
# code on every login before any page or session-authenticated API call works. API tokens are not affected.
STAFF_REQUIRE_2FA = env_bool("STAFF_REQUIRE_2FA", False)
OTP_TOTP_ISSUER = env("OTP_TOTP_ISSUER", "FM Program Portal")
# Wrong codes in a row make the next try wait 1, 2, 4, 8 … seconds (django-otp's throttling), per device.
OTP_TOTP_THROTTLE_FACTOR = 1
OTP_STATIC_THROTTLE_FACTOR = 1

# --- Internationalization -------------------------------------------------------------------
LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("ja", _("Japanese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_I18N = True
# The program runs in Asia/Tokyo: every date and time is shown in that zone.
TIME_ZONE = env("TIME_ZONE", "Asia/Tokyo")
USE_TZ = True

# --- Static files ---------------------------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
# WhiteNoise serves the static files. In production from STATIC_ROOT (the image runs collectstatic); `make run`
# sets True so they are found where they live, with no collectstatic step (about 40 ms per web process at
# start). WhiteNoise's own default is DEBUG.
WHITENOISE_USE_FINDERS = env_bool("WHITENOISE_USE_FINDERS", DEBUG)
# Production serves each static file under a name with its content's hash, from collectstatic's manifest, cached for
# a year; every {% static %} reads that manifest, so without one every page is a 500. The image's build sets
# STATIC_MANIFEST=True without PORTAL_PRODUCTION (whose checks need a database and a broker) so that collectstatic
# writes the manifest production reads (Dockerfile; tests/test_production_image.py replays it).
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", PRODUCTION)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_MANIFEST
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# --- Email ----------------------------------------------------------------------------------
EMAIL_BACKEND = env("EMAIL_BACKEND", "portal.mail.ConsoleEmailBackend")
# The console backend prints one line per email (subject and recipients); True prints each whole message.
EMAIL_CONSOLE_FULL = env_bool("EMAIL_CONSOLE_FULL", False)
# For django.core.mail.backends.smtp.EmailBackend: the relay to send through.
EMAIL_HOST = env("EMAIL_HOST", "localhost")
EMAIL_PORT = int(env("EMAIL_PORT", "25"))
EMAIL_HOST_USER = env("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "portal@fm-program.example")
# Where people reach the portal: links in emails are built on it (a mail has no request to ask).
PORTAL_URL = env("PORTAL_URL", "" if PRODUCTION else "http://127.0.0.1:8000").rstrip("/")

# --- REST API -------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Token first, so an unauthenticated script gets 401 with WWW-Authenticate rather than 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "tenants.tokens.authentication.ApiTokenAuthentication",
        # The browser session, once it has passed its second factor where one is owed.
        "tenants.twofactor.authentication.VerifiedSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "portal.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "portal.parsers.ObjectJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Writes per token a minute (the ingest endpoints have their own budget): portal/throttling.py.
    "DEFAULT_THROTTLE_CLASSES": ["portal.throttling.WriteThrottle"],
    "DEFAULT_SCHEMA_CLASS": "portal.schema.AutoSchema",  # every status code, nullability and bounds
    "EXCEPTION_HANDLER": "portal.api.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
# Fair use of the API (portal/throttling.py), per token and minute; 0 turns a budget off. Over it: 429, Retry-After.
API_WRITES_PER_MINUTE = env_int("API_WRITES_PER_MINUTE", 600)
API_REPORTS_PER_MINUTE = env_int("API_REPORTS_PER_MINUTE", 2400)  # a 1,000-node cluster's reporter needs ~1,010
SPECTACULAR_SETTINGS = {
    "TITLE": "FM Program Portal API",
    "DESCRIPTION": (
        "Scripted access to the program: organizations, the instance-type catalog, capacity pools, "
        "requests and allocations, the compute estimate, workloads, clusters and support cases; what clusters "
        "report (jobs, GPU health, nccl-tests runs), posted with a cluster's reporter token (`Token fmc_…`). "
        "Authenticate with `Authorization: Token <key>` (get a key from `POST /api/v1/auth/token/` or the "
        "API tokens page, `/account/tokens/`; keys expire, 90 days by default) or the browser session. "
        "A tenant sees only its own organization's objects; anything else is 404."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",  # served from our static files: no CDN request
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v1",  # tag operations by resource, not all under "v1"
    # Several models have a "status" or "kind": name each enum after its model, not a hash.
    "ENUM_NAME_OVERRIDES": {
        "CapacityRequestStatusEnum": "tenants.models.CapacityRequest.Status",
        "CapacityRequestKindEnum": "tenants.models.CapacityRequest.Kind",
        "AllocationStatusEnum": "tenants.models.Allocation.Status",
        "FrameworkEnum": "tenants.models.Framework",
        "WorkloadStatusEnum": "workloads.records.models.Workload.Status",
        "WorkloadStorageEnum": "workloads.records.models.Workload.Storage",
        "WorkloadChangeKindEnum": "workloads.records.models.WorkloadChange.Kind",
        "SupportCaseStatusEnum": "workloads.support.models.SupportCase.Status",
        "CaseEventKindEnum": "workloads.support.models.CaseEvent.Kind",
        "ActionItemStatusEnum": "workloads.review.models.ActionItem.Status",
        "ClusterKindEnum": "workloads.clusters.models.Cluster.Kind",
        "ClusterStorageEnum": "workloads.clusters.models.Cluster.Storage",
        "HealthEventKindEnum": "workloads.health.models.HealthEvent.Kind",
        "HealthEventSeverityEnum": "workloads.health.models.HealthEvent.Severity",
        "HealthEventSourceEnum": "workloads.health.models.HealthEvent.Source",
        "SupportCaseSeverityEnum": "workloads.support.models.SupportCase.Severity",
        "NcclVerdictEnum": "workloads.validation.models.NcclValidation.Verdict",
    },
}

# --- The portal's own metrics (/metrics: portal/metrics/, docs/operations/metrics.md) ----------------------
# Prometheus's bearer token (unset: /metrics is off, but to signed-in superusers); prometheus_client's multiprocess
# folder, where every process writes its counts (the image sets it; unset: each process counts alone).
METRICS_TOKEN = env("METRICS_TOKEN")
if METRICS_TOKEN and len(METRICS_TOKEN) < 32:
    raise ImproperlyConfigured("METRICS_TOKEN must be at least 32 characters (e.g. `openssl rand -hex 32`).")
PROMETHEUS_MULTIPROC_DIR = env("PROMETHEUS_MULTIPROC_DIR")

# --- Security -------------------------------------------------------------------------------
SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
# Production sits behind a proxy that terminates TLS (docker-compose's web speaks plain HTTP on port 8000): the
# proxy's X-Forwarded-Proto says whether the client used HTTPS. False where nothing in front sets that header,
# else a client could claim HTTPS itself.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", PRODUCTION) else None
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", PRODUCTION)
# The container's health check asks from inside, over plain HTTP; so may Prometheus, on the compose network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0)  # a year
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
# Preloading commits the whole registrable domain, for months, in every browser: the deployer's call, so it
# is off and its reminder (security.W021) silenced until they make it.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Browser hardening (docs/operations/security.md). No inline script or style on any page (admin and Swagger UI
# included), no eval: scripts, styles, images, fonts and requests come from the portal itself; images also from
# data: URLs (Swagger UI's icons). Forms post to the portal, and to the provider's origin: signing out redirects the
# logout form there, and Chromium holds a form's redirects to form-action too.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF, *SSO_FORM_ORIGINS],  # noqa: F405
}
# A rollout can try a policy on real traffic first: the browser reports what it would refuse, refusing nothing.
SECURE_CSP_REPORT_ONLY: dict = {}
SECURE_REFERRER_POLICY = "same-origin"  # other sites learn nothing of the portal's paths (org slugs, ids)
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Features no page uses, refused to the portal and anything it could ever embed (portal/security.py).
PERMISSIONS_POLICY = {
    feature: []
    for feature in (
        "accelerometer",
        "autoplay",
        "camera",
        "display-capture",
        "geolocation",
        "gyroscope",
        "hid",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "publickey-credentials-get",
        "serial",
        "usb",
        "xr-spatial-tracking",
    )
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"client_errors_without_traceback": {"()": "portal.log.ClientErrorsWithoutTraceback"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["client_errors_without_traceback"],
        }
    },
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    # pysaml2 logs each person's NameID and attributes at INFO, and xmlschema its schemas at every start: warnings only.
    "loggers": {
        "saml2": {"level": "WARNING"},
        "xmlschema": {"level": "WARNING"},
        # WeasyPrint logs each step of every PDF it lays out at INFO (the reports: workloads/outcomes/reports/).
        "weasyprint": {"level": "WARNING"},
    },
}


def check_production_settings(
    *, secret_key: str, database_engine: str, broker_url: str, portal_url: str, cache_url: str = CACHE_URL
) -> None:
    """Refuse to run production on the embedded defaults: every problem is named at once."""
    problems = []
    if not secret_key or secret_key == _DEV_SECRET_KEY or len(secret_key) < 32:
        problems.append("SECRET_KEY must be set to a random value of at least 32 characters")
    if database_engine != "django.db.backends.postgresql":
        problems.append("DATABASE_URL must point at PostgreSQL (postgres://…)")
    if not broker_url.startswith(("redis://", "rediss://")):
        problems.append("CELERY_BROKER_URL must point at Redis (redis://…)")
    if not cache_url.startswith(("redis://", "rediss://")):
        problems.append("CACHE_URL must point at Redis (redis://…): every web process counts against one API budget")
    if not portal_url.startswith(("http://", "https://")):
        problems.append("PORTAL_URL must be the address people open the portal at (https://…): emails link to it")
    if problems:
        raise ImproperlyConfigured("PORTAL_PRODUCTION=True but: " + "; ".join(problems) + ".")


if PRODUCTION:
    check_production_settings(
        secret_key=SECRET_KEY,
        database_engine=DATABASES["default"]["ENGINE"],
        broker_url=CELERY_BROKER_URL,
        portal_url=PORTAL_URL,
    )
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("PORTAL_PRODUCTION=True but ALLOWED_HOSTS is empty.")

# Organization members (tenants/members): how long an invitation link works. An invitee without an account may
# create a local one with a password while LOCAL_PASSWORD_LOGIN is on (off: they sign in through their institution).
INVITATION_DAYS = env_int("INVITATION_DAYS", 7)
