# The production image: web, worker and beat all run from it (see docker-compose.yml).
# tests/test_production_image.py replays these steps and serves the result as docker-compose.yml runs `web`.
FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PORTAL_VAR_DIR=/app/var
WORKDIR /app
# pg_dump and pg_restore for `manage.py backup` / `restore` (docs/operations/backups.md): Debian's client is as new as
# compose's PostgreSQL 16 or newer, and pg_dump reads servers older than itself. xmlsec1: pysaml2 signs, verifies and
# decrypts SAML messages with it (tenants/sso/saml/). Pango and a Japanese font: WeasyPrint lays out the reports' PDF
# (workloads/outcomes/reports/).
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-client xmlsec1 \
    libpango-1.0-0 libpangoft2-1.0-0 fonts-ipafont-gothic
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# The translations and the static files are built into the image. Neither needs a database or a broker, so they run
# without PORTAL_PRODUCTION (which insists on both); collectstatic runs with the static storage production reads
# (STATIC_MANIFEST), so that it writes the manifest of hashed names every page's {% static %} looks up.
RUN PORTAL_PRODUCTION=False python manage.py compiletranslations \
 && PORTAL_PRODUCTION=False STATIC_MANIFEST=True python manage.py collectstatic --no-input
RUN useradd --create-home portal && mkdir -p /app/var/metrics && chown -R portal /app/var
# prometheus_client's multiprocess folder (portal/metrics/): every process writes its counts there and /metrics sums
# them; docker-compose mounts one volume there in web, worker, poller and beat, so the workers' counts reach web's.
ENV PROMETHEUS_MULTIPROC_DIR=/app/var/metrics
USER portal
EXPOSE 8000
CMD ["gunicorn", "portal.wsgi:application", "--config", "portal/gunicorn.conf.py", "--bind", "0.0.0.0:8000", "--workers", "3"]
