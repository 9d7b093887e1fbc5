import logging
import logging.config

import pytest
from django.urls import reverse

from portal.log import ClientErrorsWithoutTraceback


def record(status_code: int) -> logging.LogRecord:
    try:
        raise PermissionError("denied")
    except PermissionError as error:
        entry = logging.LogRecord(
            "django.request", logging.WARNING, __file__, 1, "Forbidden", (), (type(error), error, None)
        )
    entry.status_code = status_code
    return entry


@pytest.mark.parametrize(("status_code", "keeps_traceback"), [(403, False), (404, False), (500, True)])
def test_client_errors_are_logged_without_a_traceback(status_code, keeps_traceback):
    entry = record(status_code)
    assert ClientErrorsWithoutTraceback().filter(entry) is True  # the line itself is always logged
    assert (entry.exc_info is not None) == keeps_traceback


def test_a_403_reaches_the_console_as_one_line(support_client, org, capsys):
    from django.conf import settings

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    logging.config.dictConfig(settings.LOGGING)  # its console handler now writes to the captured stderr
    try:
        response = support_client.get(reverse("capacity-request-new", args=[org.slug]))
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    assert response.status_code == 403
    logged = capsys.readouterr().err
    assert f"Forbidden (Permission denied): /orgs/{org.slug}/capacity/new/" in logged
    assert "Traceback" not in logged


def test_the_console_email_backend_logs_one_line_per_email(settings, caplog):
    import io
    import logging

    from django.core.mail import EmailMessage

    from portal.mail import ConsoleEmailBackend

    stream = io.StringIO()
    message = EmailMessage("Case #3: Xid 79 on GPU 3", "A long body\n" * 40, to=["lead@example.com", "b@example.com"])
    settings.EMAIL_CONSOLE_FULL = False
    with caplog.at_level(logging.INFO, logger="portal.mail"):
        ConsoleEmailBackend(stream=stream).send_messages([message])
    # An INFO line of its own logger: printed, a worker's Celery would log it as a WARNING (celery.redirected).
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("portal.mail", "INFO", "Email to lead@example.com, b@example.com: Case #3: Xid 79 on GPU 3")
    ]
    assert stream.getvalue() == ""
    settings.EMAIL_CONSOLE_FULL = True
    stream = io.StringIO()
    ConsoleEmailBackend(stream=stream).send_messages([message])
    assert "A long body" in stream.getvalue() and "Content-Type" in stream.getvalue()  # the whole message
