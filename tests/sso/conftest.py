import pytest

from tenants.sso import provider as sso_provider
from tests.sso.openid_provider import CLIENT_ID, CLIENT_SECRET, running_provider

REDIRECT_URI = "http://testserver/oidc/callback/"


@pytest.fixture(scope="session")
def openid_provider_process():
    with running_provider(REDIRECT_URI) as provider:
        yield provider


@pytest.fixture
def openid_provider(openid_provider_process, settings):
    """The provider, back to its defaults, and the portal set up to sign in with it."""
    openid_provider_process.configure()
    settings.OIDC_ISSUER_URL = openid_provider_process.issuer
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_PROVIDER_NAME = "Test University"
    settings.PROGRAM_CONTACT_EMAIL = "fm-program@example.jp"
    sso_provider.forget()
    yield openid_provider_process
    sso_provider.forget()
