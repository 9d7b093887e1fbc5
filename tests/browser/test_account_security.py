"""In Chromium at 1280 px, in English and Japanese: "Forgot your password?" from the login page to a new password,
and a staff member setting up an authenticator app on first login, then logging in with a code. Each page is
checked for sideways scrolling and cards that overflow; screenshots in test-artifacts/."""

import re
from base64 import b32decode

import pytest
from django.core import mail
from django_otp.oath import totp

from tests.browser.test_layout import PAGE_SCROLLS_SIDEWAYS
from tests.browser.test_usage import OVERFLOWING
from tests.factories import PASSWORD, MembershipFactory, StaffRoleFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "forgot": "Forgot your password?",
        "email": "Email address",
        "send": "Send the link",
        "sent": "Check your email",
        "new": "New password",
        "again": "New password again",
        "save": "Save the new password",
        "saved": "Password saved",
        "setup": "Set up an authenticator app",
        "app_code": "Code from the app",
        "turn_on": "Turn on",
        "codes": "Recovery codes",
        "kept": "I have kept them",
        "verify_title": "Enter your code",
        "code": "Code",
        "verify": "Verify",
    },
    "ja": {
        "forgot": "パスワードをお忘れですか？",
        "email": "メールアドレス",
        "send": "リンクを送信",
        "sent": "メールを確認してください",
        "new": "新しいパスワード",
        "again": "新しいパスワード（確認）",
        "save": "新しいパスワードを保存",
        "saved": "パスワードを保存しました",
        "setup": "認証アプリの設定",
        "app_code": "アプリのコード",
        "turn_on": "有効にする",
        "codes": "リカバリーコード",
        "kept": "保管しました",
        "verify_title": "コードの入力",
        "code": "コード",
        "verify": "確認",
    },
}


@pytest.fixture(autouse=True)
def local_mail(settings, live_server):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.PORTAL_URL = live_server.url


def fits(page) -> None:
    assert page.evaluate(PAGE_SCROLLS_SIDEWAYS) <= 0, page.url
    assert page.evaluate(OVERFLOWING) == [], page.url


def log_in(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.locator("input[name=username]").fill(username)
    page.locator("input[name=password]").fill(password)
    page.locator("form button[type=submit]").last.click()
    page.wait_for_load_state()


@pytest.mark.parametrize("language", ["en", "ja"])
def test_forgot_password_to_a_new_one(page, live_server, screenshot, language):
    words = WORDS[language]
    user = MembershipFactory(user__email="ayaka@sakura.example").user
    page.context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page.goto(f"{live_server.url}/login/")
    page.get_by_role("link", name=words["forgot"]).click()
    page.get_by_label(words["email"]).fill("ayaka@sakura.example")
    fits(page)
    screenshot(f"password-reset-form-{language}")
    page.get_by_role("button", name=words["send"]).click()
    assert page.get_by_role("heading", name=words["sent"]).is_visible()
    fits(page)
    screenshot(f"password-reset-sent-{language}")

    assert len(mail.outbox) == 1
    link = re.search(r"http://\S+/password-reset/\S+/", mail.outbox[0].body).group(0)
    page.goto(link)
    page.get_by_label(words["new"], exact=True).fill("a fresh one for the lab")
    page.get_by_label(words["again"]).fill("a fresh one for the lab")
    fits(page)
    screenshot(f"password-reset-confirm-{language}")
    page.get_by_role("button", name=words["save"]).click()
    assert page.get_by_role("heading", name=words["saved"]).is_visible()
    fits(page)

    log_in(page, live_server, user.username, "a fresh one for the lab")
    assert "/login/" not in page.url


@pytest.mark.parametrize("language", ["en", "ja"])
def test_staff_set_up_an_app_and_log_in_with_a_code(page, live_server, screenshot, settings, language):
    settings.STAFF_REQUIRE_2FA = True
    words = WORDS[language]
    manager = StaffRoleFactory().user
    page.context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])

    log_in(page, live_server, manager.username, PASSWORD)
    assert "/account/two-factor/setup/" in page.url
    assert page.get_by_role("heading", name=words["setup"]).is_visible()
    qr = page.locator(".qr svg").bounding_box()
    assert qr["width"] >= 150 and qr["height"] >= 150  # big enough for a phone to read
    fits(page)
    screenshot(f"two-factor-setup-{language}")
    key = b32decode(page.locator("#setup-secret").inner_text().replace(" ", ""))
    page.get_by_label(words["app_code"]).fill(f"{totp(key):06d}")
    page.get_by_role("button", name=words["turn_on"]).click()
    assert page.get_by_role("heading", name=words["codes"]).is_visible()
    codes = page.locator("ul.recovery-codes li").all_inner_texts()
    assert len(codes) == 10
    fits(page)
    screenshot(f"two-factor-recovery-codes-{language}")
    page.get_by_role("link", name=words["kept"]).click()
    page.wait_for_load_state()
    assert "/two-factor/" not in page.url  # on to the page first asked for

    page.context.clear_cookies()
    page.context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    log_in(page, live_server, manager.username, PASSWORD)
    assert "/account/two-factor/verify/" in page.url
    assert page.get_by_role("heading", name=words["verify_title"]).is_visible()
    page.get_by_label(words["code"], exact=True).fill("000000")
    page.get_by_role("button", name=words["verify"]).click()
    assert page.locator(".errorlist").is_visible()
    fits(page)
    screenshot(f"two-factor-verify-{language}")
    page.wait_for_timeout(1100)  # the wait one wrong code sets (django-otp's throttling)
    # The next step's code: the app's code of the setup step was taken already, and each is accepted once.
    page.get_by_label(words["code"], exact=True).fill(f"{totp(key, drift=1):06d}")
    page.get_by_role("button", name=words["verify"]).click()
    page.wait_for_load_state()
    assert "/two-factor/" not in page.url and "/login/" not in page.url
    assert page.get_by_role("heading", level=1).is_visible()
