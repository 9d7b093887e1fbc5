"""The install guide on the Reporter page is the script's own, its prose in the organization's language and its
commands exactly as the script says them (they paste as they are)."""

import html

import polib
import pytest
from django.conf import settings
from django.utils import translation

from tests.factories import ClusterFactory
from workloads.reporting import fmp_reporter
from workloads.reporting.views import guide_paragraphs, install_guide

pytestmark = pytest.mark.django_db

CATALOG = polib.pofile(str(settings.BASE_DIR / "workloads" / "locale" / "ja" / "LC_MESSAGES" / "django.po"))
PROSE = [p.rstrip("\n") for p in guide_paragraphs() if not p.startswith(("sudo ", "[", "*/5"))]
COMMANDS = [line for line in fmp_reporter.__doc__.splitlines() if line.startswith("sudo ")]


def test_every_prose_paragraph_of_the_guide_has_its_japanese():
    # A paragraph changed in the script without its entry in the catalog would show English on a Japanese page.
    assert len(PROSE) == 8
    for paragraph in PROSE:
        entry = CATALOG.find(paragraph)
        assert entry is not None and entry.msgstr, paragraph[:60]


def test_a_japanese_organizations_guide_is_in_japanese_with_the_commands_as_they_are(member_client, org):
    org.language = "ja"
    org.save()
    cluster = ClusterFactory(organization=org, name="p5-train")
    with translation.override("en"):  # the reader's language does not choose it
        page = html.unescape(member_client.get(f"/clusters/{cluster.pk}/reporter/").text)
    assert "2. クラスターのページに表示されたトークン" in page and "3. 何も送らずに試し、次に本番で実行します:" in page
    assert "The token shown on the cluster's page" not in page
    assert f"FMP_CLUSTER_ID={cluster.pk}\n" in page
    for command in COMMANDS:
        assert command in page, command


def test_an_english_organizations_guide_is_the_scripts_text():
    guide = install_guide("https://portal.example.org", fmp_reporter.EXAMPLE_CLUSTER, language="en")
    assert guide == fmp_reporter.__doc__.split("\n\n", 2)[2]
    japanese = install_guide("https://portal.example.org", fmp_reporter.EXAMPLE_CLUSTER, language="ja")
    assert [line for line in japanese.splitlines() if line.startswith("sudo ")] == COMMANDS
