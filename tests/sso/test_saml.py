"""Sign-in through a real SAML identity provider (pysaml2's own IdP, tests/sso/saml_provider.py): metadata in and
out, the person made and placed from eduPersonPrincipalName and isMemberOf, invitations, and every answer that must
be refused (tampered, another SP's, replayed, expired, unsigned, garbage) with nothing changed. The browser walks the
same flow in tests/browser/test_saml.py."""

import base64
import datetime
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from saml2.saml import NAMEID_FORMAT_PERSISTENT

from tenants.members.models import Invitation
from tenants.members.services import invite
from tenants.models import AuditEvent, Membership
from tenants.sso.models import GrantSource, OidcIdentity
from tenants.sso.saml import metadata as saml_metadata
from tests.factories import MembershipFactory, OrganizationFactory, UserFactory
from tests.sso.saml_provider import OTHER_IDP, make_keypair, running_idp

pytestmark = pytest.mark.django_db
User = get_user_model()
KEY = "test-idp"
ACS = f"/saml/{KEY}/acs/"
EPPN_OID = "urn:oid:1.3.6.1.4.1.5923.1.1.1.6"


@pytest.fixture(scope="session")
def idp_process():
    with running_idp() as idp:
        yield idp


def provider_entry(idp, **options) -> dict:
    return {"key": KEY, "name": "Test University", "protocol": "saml", "metadata_url": f"{idp.url}/metadata",
            "trust_email": True, **options}  # fmt: skip


@pytest.fixture
def idp(idp_process, settings, client):
    """The IdP back to its defaults, the portal set up to sign in with it, and the portal's SP registered there."""
    idp_process.answer_with()
    idp_process.sign_metadata = False
    idp_process.users.clear()
    settings.SSO_PROVIDERS = [provider_entry(idp_process)]
    settings.PROGRAM_CONTACT_EMAIL = "fm-program@example.jp"
    saml_metadata.forget()
    idp_process.sp_metadata = [client.get(f"/saml/{KEY}/metadata/").content.decode()]
    yield idp_process
    saml_metadata.forget()


@pytest.fixture
def sakura(db):
    return OrganizationFactory(slug="sakura-lab", name="Sakura Language Lab")


@pytest.fixture
def kitsune(db):
    return OrganizationFactory(slug="kitsune-ai", name="Kitsune AI")


def answer(client, idp, user: str, login: str = f"/saml/{KEY}/login/") -> dict[str, str]:
    """Start at the portal, sign in at the IdP as `user`: the fields the IdP's page posts to the ACS."""
    start = client.get(login)
    assert start.status_code == 302, start.content[:500]
    action, fields = idp.sign_in(start["Location"], user)
    assert urlsplit(action).path == ACS
    return fields


def sign_in(client, idp, user: str, login: str = f"/saml/{KEY}/login/"):
    return client.post(ACS, answer(client, idp, user, login))


def alice(idp, **changes) -> None:
    attributes = {
        "eduPersonPrincipalName": "alice@uni.example",
        "mail": "alice@uni.example",
        "givenName": "Alice",
        "sn": "Tanaka",
        "displayName": "Alice Tanaka",
        "isMemberOf": ["staff-all", "fmportal:sakura-lab:admin", "fmportal:sakura-lab:member"],
    }
    idp.user("alice", **{**attributes, **changes})


def nothing_changed() -> None:
    assert not User.objects.exists() and not Membership.objects.exists() and not OidcIdentity.objects.exists()


# --- metadata out and in ---------------------------------------------------------------------------------------


def test_sp_metadata_is_xml_naming_the_acs_and_the_entity_id(client, settings, idp, tmp_path):
    response = client.get(f"/saml/{KEY}/metadata/")
    assert response.status_code == 200 and response["Content-Type"] == "application/samlmetadata+xml"
    ns = {"md": "urn:oasis:names:tc:SAML:2.0:metadata", "ds": "http://www.w3.org/2000/09/xmldsig#"}
    root = ET.fromstring(response.content)
    assert root.get("entityID") == f"http://testserver/saml/{KEY}/metadata/"
    acs = root.find("md:SPSSODescriptor/md:AssertionConsumerService", ns)
    assert acs.get("Location") == f"http://testserver{ACS}"
    assert acs.get("Binding") == "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
    assert root.find("ds:Signature", ns) is None  # no SP key: unsigned, no certificate

    key, cert = make_keypair(tmp_path, "sp")
    settings.SSO_PROVIDERS = [provider_entry(idp, sp_key_file=key, sp_cert_file=cert)]
    root = ET.fromstring(client.get(f"/saml/{KEY}/metadata/").content)
    assert root.find("ds:Signature", ns) is not None
    assert root.find("md:SPSSODescriptor/md:KeyDescriptor", ns) is not None


def test_an_unknown_or_openid_provider_has_no_saml_pages(client, idp):
    assert client.get("/saml/nobody/metadata/").status_code == 404
    assert client.get("/saml/nobody/login/").status_code == 404
    assert client.post("/saml/nobody/acs/").status_code == 404


def test_the_login_page_has_a_button_for_the_saml_provider(client, idp):
    page = client.get("/login/?next=/orgs/sakura-lab/")
    assert "Sign in with Test University" in page.content.decode()
    assert f'href="/saml/{KEY}/login/?next=%2Forgs%2Fsakura-lab%2F"' in page.content.decode()


def test_saml_settings_are_checked(settings, idp, tmp_path):
    from tenants.sso.checks import saml_settings

    settings.SSO_PROVIDERS = [{"key": "bare", "protocol": "saml", "sp_key_file": str(tmp_path / "missing.key")}]
    ids = sorted(problem.id for problem in saml_settings(None))
    assert ids == ["tenants.sso.E004", "tenants.sso.E005", "tenants.sso.E006"]
    settings.SSO_PROVIDERS = [provider_entry(idp)]
    assert [problem.id for problem in saml_settings(None)] == ["tenants.sso.W001"]
    call_command("check")  # warnings do not stop the portal


# --- signing in --------------------------------------------------------------------------------------------------


def test_first_sign_in_creates_the_user_from_eppn_and_places_them_by_is_member_of(client, idp, sakura):
    alice(idp)
    response = sign_in(client, idp, "alice")

    assert response.status_code == 302 and response["Location"] == "/"
    identity = OidcIdentity.objects.select_related("user").get()
    assert (identity.issuer, identity.subject) == (idp.entity_id, "alice@uni.example")
    user = identity.user
    assert (user.username, user.email, user.first_name, user.last_name) == (
        "alice",
        "alice@uni.example",
        "Alice",
        "Tanaka",
    )
    assert not user.has_usable_password()
    membership = Membership.objects.get(user=user)
    assert (membership.organization, membership.role, membership.source) == (sakura, "admin", GrantSource.SSO)
    event = AuditEvent.objects.get(organization=sakura)
    assert (event.action, event.changes) == ("sso.membership_granted", {"role": [None, "admin"]})
    assert client.get("/").url == "/orgs/sakura-lab/"


def test_a_second_sign_in_follows_changed_groups(client, idp, sakura, kitsune):
    alice(idp, isMemberOf=["fmportal:sakura-lab:member"])
    sign_in(client, idp, "alice")
    user = OidcIdentity.objects.get().user
    assert dict(Membership.objects.filter(user=user).values_list("organization__slug", "role")) == {
        "sakura-lab": "member"
    }

    alice(idp, isMemberOf=["fmportal:kitsune-ai:admin"])
    client.logout()
    assert sign_in(client, idp, "alice").status_code == 302
    assert dict(Membership.objects.filter(user=user).values_list("organization__slug", "role")) == {
        "kitsune-ai": "admin"
    }
    assert AuditEvent.objects.filter(organization=sakura, action="sso.membership_removed").exists()
    assert OidcIdentity.objects.count() == 1


def test_next_is_where_the_person_lands(client, idp, sakura):
    alice(idp)
    response = sign_in(client, idp, "alice", login=f"/saml/{KEY}/login/?next=/orgs/sakura-lab/")
    assert response["Location"] == "/orgs/sakura-lab/"


def test_without_eppn_the_persistent_name_id_is_the_subject(client, idp, sakura):
    idp.user("bob", mail="bob@uni.example", isMemberOf=["fmportal:sakura-lab:member"])
    assert sign_in(client, idp, "bob").status_code == 400  # a transient NameID names no one: refused
    assert "did not send an identifier" in sign_in(client, idp, "bob").content.decode()
    nothing_changed()
    idp.answer_with(name_id_format=NAMEID_FORMAT_PERSISTENT)
    assert sign_in(client, idp, "bob").status_code == 302
    identity = OidcIdentity.objects.get()
    assert identity.subject and identity.subject != "bob@uni.example"  # the IdP's pairwise persistent NameID
    assert identity.user.username == "bob"  # mail's local part
    client.logout()
    assert sign_in(client, idp, "bob").status_code == 302
    assert OidcIdentity.objects.get() == identity  # the same NameID the next time


def test_attributes_and_groups_claim_may_be_mapped(client, idp, settings, sakura):
    settings.SSO_PROVIDERS = [provider_entry(idp, attributes={"sub": "uid", "groups": ["eduPersonAffiliation"]})]
    idp.user("carol", uid="c0042", mail="carol@uni.example", eduPersonAffiliation=["fmportal:sakura-lab:viewer"])
    assert sign_in(client, idp, "carol").status_code == 302
    identity = OidcIdentity.objects.get()
    assert identity.subject == "c0042"
    assert Membership.objects.get(user=identity.user).role == "viewer"


def test_an_encrypted_assertion_to_an_sp_with_a_key_is_read(client, idp, settings, tmp_path, sakura):
    key, cert = make_keypair(tmp_path, "sp")
    settings.SSO_PROVIDERS = [provider_entry(idp, sp_key_file=key, sp_cert_file=cert)]
    idp.sp_metadata = [client.get(f"/saml/{KEY}/metadata/").content.decode()]
    idp.answer_with(encrypt=True, sign_assertion=True)
    alice(idp)
    fields = answer(client, idp, "alice")
    assert b"EncryptedAssertion" in base64.b64decode(fields["SAMLResponse"])
    assert client.post(ACS, fields).status_code == 302
    assert OidcIdentity.objects.get().subject == "alice@uni.example"


def test_a_person_with_no_group_of_the_program_is_told_whom_to_ask(client, idp, sakura):
    alice(idp, isMemberOf=["staff-all"])
    response = sign_in(client, idp, "alice")
    assert response.status_code == 403
    assert "You are not yet in any organization of the program" in response.content.decode()
    nothing_changed()


# --- invitations -----------------------------------------------------------------------------------------------


def open_invitation(client, org, email: str) -> Invitation:
    admin = MembershipFactory(organization=org, role="admin").user
    invitation, key = invite(user=admin, organization=org, email=email, role="member")
    assert client.get(f"/invitations/{key}/").status_code == 200
    return invitation


def test_an_invitation_is_joined_by_a_person_without_groups_when_mail_is_trusted(client, idp, sakura):
    open_invitation(client, sakura, "alice@uni.example")
    alice(idp, isMemberOf=[])
    response = sign_in(client, idp, "alice")
    assert response.status_code == 302 and response["Location"] == "/orgs/sakura-lab/"
    user = OidcIdentity.objects.get().user
    assert Membership.objects.get(user=user, organization=sakura).role == "member"


def test_an_invitation_is_someone_elses_when_mail_is_not_trusted(client, idp, settings, sakura):
    settings.SSO_PROVIDERS = [provider_entry(idp, trust_email=False)]
    open_invitation(client, sakura, "alice@uni.example")
    alice(idp, isMemberOf=[])
    response = sign_in(client, idp, "alice")
    assert response.status_code == 403
    assert "This invitation is for someone else" in response.content.decode()
    assert not OidcIdentity.objects.exists()
    assert not Membership.objects.filter(organization=sakura, user__email="alice@uni.example").exists()


# --- refused answers: 400, nothing changed -------------------------------------------------------------------


def refused(response) -> None:
    assert response.status_code == 400, response.content[:500]
    assert "Sign-in not completed" in response.content.decode()
    nothing_changed()


def test_a_tampered_signature_is_refused(client, idp, sakura):
    alice(idp, isMemberOf=["fmportal:sakura-lab:member"])
    fields = answer(client, idp, "alice")
    xml = base64.b64decode(fields["SAMLResponse"]).decode()
    assert "fmportal:sakura-lab:member" in xml
    fields["SAMLResponse"] = base64.b64encode(xml.replace("sakura-lab:member", "sakura-lab:admin").encode()).decode()
    refused(client.post(ACS, fields))


def test_an_answer_for_another_sp_is_refused(client, idp, settings, sakura):
    other_sp = "https://other-sp.example/shibboleth"
    settings.SSO_PROVIDERS = [provider_entry(idp, sp_entity_id=other_sp)]
    idp.register_sp(client.get(f"/saml/{KEY}/metadata/").content.decode())  # a service the IdP also serves
    settings.SSO_PROVIDERS = [provider_entry(idp)]
    alice(idp)
    idp.answer_with(audience=other_sp)
    refused(client.post(ACS, answer(client, idp, "alice")))


def test_an_unsigned_answer_is_refused(client, idp, sakura):
    alice(idp)
    idp.answer_with(sign_response=False, sign_assertion=False)
    refused(client.post(ACS, answer(client, idp, "alice")))


def test_an_expired_answer_is_refused(client, idp, sakura):
    alice(idp)
    fields = answer(client, idp, "alice")
    with time_machine.travel(datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=10)):
        refused(client.post(ACS, fields))


def test_a_replayed_answer_is_refused(client, idp, sakura):
    alice(idp)
    fields = answer(client, idp, "alice")
    assert client.post(ACS, fields).status_code == 302
    assert client.post(ACS, fields).status_code == 400  # the request it answered is used up
    client.logout()
    assert client.post(ACS, {**fields, "portal_continued": "1"}).status_code == 400
    other = Client()
    other.get(f"/saml/{KEY}/login/")  # a session with a request of its own
    assert other.post(ACS, fields).status_code == 400
    assert OidcIdentity.objects.count() == 1


def test_an_answer_to_no_request_of_this_session_is_refused(client, idp, sakura):
    alice(idp)
    fields = answer(client, idp, "alice")
    other = Client()
    other.get("/login/")
    other.get(f"/saml/{KEY}/login/")
    refused(other.post(ACS, {**fields, "portal_continued": "1"}))


def test_an_idp_that_says_no_is_a_page_saying_so(client, idp, sakura):
    alice(idp)
    idp.answer_with(status=("urn:oasis:names:tc:SAML:2.0:status:AuthnFailed", "The person cancelled"))
    response = client.post(ACS, answer(client, idp, "alice"))
    assert response.status_code == 400, response.content[:500]
    assert "did not sign you in: The person cancelled" in response.content.decode(), response.content.decode()
    nothing_changed()


GARBAGE = [
    "",
    "not base64 at all!",
    base64.b64encode(b"<not-xml").decode(),
    base64.b64encode(b"<samlp:Response xmlns:samlp='urn:oasis:names:tc:SAML:2.0:protocol'/>").decode(),
    base64.b64encode(
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
        b"<lolz>&lol2;</lolz>"
    ).decode(),
    base64.b64encode(b"\x00\xff" * 100).decode(),
]


@pytest.mark.parametrize("garbage", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_is_a_400(client, idp, garbage):
    client.get(f"/saml/{KEY}/login/")
    refused(client.post(ACS, {"SAMLResponse": garbage}))
    refused(client.post(ACS, {"SAMLResponse": garbage, "portal_continued": "1"}, HTTP_COOKIE=""))


def test_a_post_without_the_session_cookie_is_posted_again_from_the_portals_page(idp, sakura):
    """The IdP is another site: its POST comes without the session cookie (SameSite=Lax). The portal's page posts
    it again, with the cookie, and the sign-in goes on."""
    browser = Client()
    alice(idp)
    fields = answer(browser, idp, "alice")
    session = browser.cookies.pop("sessionid")
    page = browser.post(ACS, fields)
    assert page.status_code == 200 and "data-auto-submit" in page.content.decode()
    assert not OidcIdentity.objects.exists()
    browser.cookies["sessionid"] = session.value
    again = {"SAMLResponse": fields["SAMLResponse"], "portal_continued": "1"}
    assert browser.post(ACS, again).status_code == 302
    assert OidcIdentity.objects.get().subject == "alice@uni.example"


def test_a_body_over_the_limit_is_not_a_500(client, idp):
    response = client.post(ACS, "x", content_type="application/x-www-form-urlencoded", CONTENT_LENGTH=str(2**30))
    assert 400 <= response.status_code < 500


# --- the IdP's metadata -------------------------------------------------------------------------------------------


def test_metadata_that_cannot_be_fetched_is_a_503(client, idp, settings):
    settings.SSO_PROVIDERS = [provider_entry(idp, metadata_url=f"{idp.url}/missing")]
    response = client.get(f"/saml/{KEY}/login/")
    assert response.status_code == 503 and "Test University is not answering" in response.content.decode()
    settings.SSO_PROVIDERS = [provider_entry(idp, metadata_url="http://127.0.0.1:9/metadata")]  # nothing listens
    saml_metadata.forget()
    assert client.get(f"/saml/{KEY}/login/").status_code == 503
    client.cookies["sessionid"] = "x"
    assert client.post(ACS, {"SAMLResponse": "x", "portal_continued": "1"}).status_code in (400, 503)


def test_signed_metadata_is_checked_against_metadata_cert(client, idp, settings, tmp_path, sakura):
    idp.sign_metadata = True
    settings.SSO_PROVIDERS = [provider_entry(idp, metadata_cert=idp.federation_cert)]
    alice(idp)
    assert sign_in(client, idp, "alice").status_code == 302

    _, stranger = make_keypair(tmp_path, "stranger")
    settings.SSO_PROVIDERS = [provider_entry(idp, metadata_cert=stranger)]
    saml_metadata.forget()
    assert client.get(f"/saml/{KEY}/login/").status_code == 503

    idp.sign_metadata = False  # unsigned metadata is refused when a signature is expected
    settings.SSO_PROVIDERS = [provider_entry(idp, metadata_cert=idp.federation_cert)]
    saml_metadata.forget()
    assert client.get(f"/saml/{KEY}/login/").status_code == 503


def test_a_federations_idps_are_chosen_by_name(client, idp, settings, sakura):
    settings.SSO_PROVIDERS = [
        provider_entry(idp, metadata_url=f"{idp.url}/federation", metadata_cert=idp.federation_cert)
    ]
    page = client.get(f"/saml/{KEY}/login/?next=/orgs/sakura-lab/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Choose your institution" in text and "Other University" in text and idp.name in text
    assert text.index("Other University") < text.index(idp.name)  # by name
    alice(idp)
    login = f"/saml/{KEY}/login/?idp={idp.entity_id}&next=/orgs/sakura-lab/"
    # An IdP of the federation the provider does not vouch for: its groups place no one (it could say "admin").
    refused = sign_in(client, idp, "alice", login=login)
    assert refused.status_code == 403 and not Membership.objects.exists()
    settings.SSO_PROVIDERS = [
        provider_entry(idp, metadata_url=f"{idp.url}/federation", metadata_cert=idp.federation_cert,
                       trusted_idps=[idp.entity_id])
    ]  # fmt: skip
    assert sign_in(client, idp, "alice", login=login)["Location"] == "/orgs/sakura-lab/"
    assert client.get(f"/saml/{KEY}/login/?idp=https://unknown.example/idp").status_code == 404
    assert client.get(f"/saml/{KEY}/login/?idp={OTHER_IDP}").status_code == 302


def test_an_idp_of_the_federation_cannot_pass_for_another_by_the_responses_unsigned_issuer(
    client, idp, settings, sakura
):
    """The Response's own Issuer is not signed when only the assertion is: an IdP of the federation that rewrites it
    to another IdP's name, releasing the eppn of that IdP's user, is refused (the signed assertion names it)."""
    settings.SSO_PROVIDERS = [
        provider_entry(idp, metadata_url=f"{idp.url}/federation", metadata_cert=idp.federation_cert)
    ]
    victim = UserFactory(username="victim", email="victim@other-university.example")
    OidcIdentity.objects.create(user=victim, issuer=OTHER_IDP, subject="victim@other-university.example")
    Membership.objects.create(user=victim, organization=sakura, role="admin", source=GrantSource.LOCAL)
    idp.user("mallory", eduPersonPrincipalName="victim@other-university.example", isMemberOf=[])
    idp.answer_with(sign_response=False, sign_assertion=True)
    fields = answer(client, idp, "mallory", login=f"/saml/{KEY}/login/?idp={OTHER_IDP}")
    xml = base64.b64decode(fields["SAMLResponse"]).decode()
    head, cut, tail = xml.partition("Assertion ")
    assert idp.entity_id in head and idp.entity_id in tail
    fields["SAMLResponse"] = base64.b64encode(
        (head.replace(idp.entity_id, OTHER_IDP, 1) + cut + tail).encode()
    ).decode()

    response = client.post(ACS, fields)

    assert response.status_code == 400 and "_auth_user_id" not in client.session
