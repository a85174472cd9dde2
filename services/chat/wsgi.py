"""WSGI entry point for gunicorn: ``gunicorn services.chat.wsgi:app``."""

from services.chat import create_app

app = create_app()
