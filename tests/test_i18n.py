import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.urls import reverse

from tests.environment import unavailable

# The project's own folders only: not the virtualenvs (.venv, .venv-pcluster) with their packages' catalogs.
CATALOGS = sorted(
    catalog
    for folder in Path(settings.BASE_DIR).iterdir()
    if folder.is_dir() and not folder.name.startswith(".")
    for catalog in folder.glob("**/locale/ja/LC_MESSAGES/django.po")
) + sorted(Path(settings.BASE_DIR).glob("locale/ja/LC_MESSAGES/django.po"))
CATALOGS = list(dict.fromkeys(CATALOGS))


def test_every_catalog_is_found():
    names = {str(p.relative_to(settings.BASE_DIR)) for p in CATALOGS}
    assert "locale/ja/LC_MESSAGES/django.po" in names
    assert "tenants/locale/ja/LC_MESSAGES/django.po" in names


@pytest.mark.parametrize("catalog", CATALOGS, ids=lambda p: str(p.relative_to(settings.BASE_DIR)))
def test_japanese_catalog_is_complete(catalog):
    po = polib.pofile(str(catalog))
    untranslated = [e.msgid for e in po.untranslated_entries()]
    fuzzy = [e.msgid for e in po.fuzzy_entries()]
    assert not untranslated, f"untranslated: {untranslated}"
    assert not fuzzy, f"fuzzy: {fuzzy}"


@pytest.mark.django_db
def test_login_page_in_japanese(client):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ja"
    response = client.get(reverse("login"))
    assert '<html lang="ja">' in response.text
    assert "ログイン" in response.text
    assert "パスワード" in response.text


@pytest.mark.django_db
def test_language_switch_sets_the_cookie_and_returns(member_client, org):
    response = member_client.post(reverse("set_language"), {"language": "ja", "next": f"/orgs/{org.slug}/"})
    assert response.status_code == 302
    assert response["Location"] == f"/orgs/{org.slug}/"
    page = member_client.get(f"/orgs/{org.slug}/")
    assert "メンバー" in page.text
    assert "時刻は Asia/Tokyo で表示しています。" in page.text


@pytest.mark.django_db
def test_org_members_joined_date_is_in_program_timezone(member_client, member, org):
    from datetime import UTC, datetime

    # 20:00 UTC on Jan 31 is already Feb 1 in Tokyo.
    org.memberships.filter(user=member).update(created_at=datetime(2027, 1, 31, 20, 0, tzinfo=UTC))
    response = member_client.get(f"/orgs/{org.slug}/")
    assert "2027-02-01" in response.text


def test_every_translatable_string_in_the_source_has_a_japanese_translation(tmp_path):
    """Re-extract the catalogs from a copy of the source (`make makemessages`): a string someone marked for
    translation but never translated shows up untranslated or fuzzy there, though the committed catalog is clean."""
    if not shutil.which("xgettext"):
        unavailable("no GNU gettext: apt-get install gettext (.ci/run installs it)")
    source = Path(settings.BASE_DIR)
    copy = tmp_path / "src"
    shutil.copytree(
        source,
        copy,
        ignore=shutil.ignore_patterns(".venv*", ".git", "var", "test-artifacts", "__pycache__", "*.mo", "*.sqlite3*"),
    )
    subprocess.run(
        ["make", "--no-print-directory", "-s", "makemessages", f"BIN={Path(sys.executable).parent}"],
        cwd=copy,
        check=True,
        capture_output=True,
        timeout=300,
    )
    problems = {}
    for catalog in CATALOGS:
        po = polib.pofile(str(copy / catalog.relative_to(source)))
        missing = [e.msgid for e in po.untranslated_entries()] + [e.msgid for e in po.fuzzy_entries()]
        if missing:
            problems[str(catalog.relative_to(source))] = missing
    assert not problems, f"translate these, then run `make makemessages`: {problems}"
