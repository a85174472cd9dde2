import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "dev-insecure-change-me-7c1f0b2e9a")
DEBUG = os.environ.get("DJANGO_DEBUG", "0") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"] + [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",") if h]

INSTALLED_APPS = ["django.contrib.sessions", "django.contrib.staticfiles", "chat"]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "chatproj.urls"
WSGI_APPLICATION = "chatproj.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]

# No database: the chat lives in Redis, the session in a signed cookie.
DATABASES = {}
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
SESSION_COOKIE_AGE = 6 * 3600

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CHAT_TTL_SECONDS = int(os.environ.get("CHAT_TTL_SECONDS", 6 * 3600))
APP_BUGS = {b.strip() for b in os.environ.get("APP_BUGS", "").split(",") if b.strip()}
PORT = int(os.environ.get("PORT", "8000"))

STATIC_URL = "static/"
USE_TZ = True
TIME_ZONE = "UTC"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"chat": {"handlers": ["console"], "level": "INFO"}},
}
