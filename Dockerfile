# The production image: web, worker and beat all run from it (see docker-compose.yml).
# tests/test_production_image.py replays these steps and serves the result as docker-compose.yml runs `web`.
FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PORTAL_VAR_DIR=/app/var
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# The translations and the static files are built into the image. Neither needs a database or a broker, so they run
# without PORTAL_PRODUCTION (which insists on both); collectstatic runs with the static storage production reads
# (STATIC_MANIFEST), so that it writes the manifest of hashed names every page's {% static %} looks up.
RUN PORTAL_PRODUCTION=False python manage.py compiletranslations \
 && PORTAL_PRODUCTION=False STATIC_MANIFEST=True python manage.py collectstatic --no-input
RUN useradd --create-home portal && mkdir -p /app/var && chown -R portal /app/var
USER portal
EXPOSE 8000
CMD ["gunicorn", "portal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
