# The production image: web, worker and beat all run from it (see docker-compose.yml).
FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PORTAL_VAR_DIR=/app/var
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# collectstatic and the translations need settings that import cleanly without production services.
RUN PORTAL_PRODUCTION=False python manage.py compiletranslations \
 && PORTAL_PRODUCTION=False python manage.py collectstatic --no-input
RUN useradd --create-home portal && mkdir -p /app/var && chown -R portal /app/var
USER portal
EXPOSE 8000
CMD ["gunicorn", "portal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
