"""A real SAML identity provider for the sign-in tests: pysaml2's own IdP (saml2.server.Server) behind a small WSGI
server in a thread, with a key and certificate made at start. It serves:

  GET  /metadata        its metadata, signed with the federation's key when `sign_metadata`
  GET  /federation      a federation's metadata (signed with the federation's key): this IdP and a second one
  GET  /sso/redirect    the HTTP-Redirect SingleSignOnService: a login form (any password; the login is the user)
  POST /login           the answer, as a page whose form posts the Response to the SP's ACS (a script submits it)

A test puts users in (`user(name, **attributes)`, friendly names as pysaml2's attribute maps know them) and changes
what the next answers look like (`answer_with`: unsigned, another audience); `sign_in` walks the pages without a
browser and returns the form the IdP's page would post."""

from __future__ import annotations

import base64
import datetime
import html
import re
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs, urljoin
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string, entities_descriptor, entity_descriptor
from saml2.saml import NAME_FORMAT_URI, NAMEID_FORMAT_PERSISTENT, NAMEID_FORMAT_TRANSIENT
from saml2.server import Server
from saml2.sigver import security_context

from tests.environment import unavailable
from tests.servers import free_port

OTHER_IDP = "https://idp.other-university.example/idp/shibboleth"


def require_xmlsec() -> None:
    """Skip without xmlsec1 (pysaml2 signs and verifies with it); in CI, where .ci/run installs it, fail."""
    if not shutil.which("xmlsec1"):
        unavailable("SAML sign-in needs xmlsec1: apt-get install xmlsec1 (.ci/run does)")


def make_keypair(directory: Path, name: str) -> tuple[str, str]:
    """A throwaway RSA key and self-signed certificate, as PEM files: (key file, certificate file)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_file, cert_file = directory / f"{name}.key", directory / f"{name}.crt"
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(key_file), str(cert_file)


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class SamlIdentityProvider:
    def __init__(self, directory: Path, port: int, name: str = "Test University IdP"):
        self.directory = directory
        self.url = f"http://127.0.0.1:{port}"
        self.entity_id = f"{self.url}/metadata"
        self.name = name
        self.key_file, self.cert_file = make_keypair(directory, "idp")
        self.federation_key, self.federation_cert = make_keypair(directory, "federation")
        self.users: dict[str, dict] = {}
        self.sp_metadata: list[str] = []
        self.pending: dict[str, object] = {}  # login form key → the parsed AuthnRequest
        self.sign_metadata = False
        self.ident = None
        self.answer_with()

    # --- what tests change -------------------------------------------------------------------------------------
    def user(self, name: str, **attributes) -> None:
        """The attributes released for `name` (eduPersonPrincipalName=…, mail=…, isMemberOf=[…]…)."""
        self.users[name] = {k: v if isinstance(v, list) else [v] for k, v in attributes.items()}

    def answer_with(self, *, sign_response=True, sign_assertion=False, audience=None, encrypt=False, status=None,
                    name_id_format=NAMEID_FORMAT_TRANSIENT):  # fmt: skip
        """How the next answers are made; what is not given goes back to its default (a signed response with a
        transient NameID, as Shibboleth IdPs send by default). `status`: (status code, message) of a refusal."""
        self.options = {"sign_response": sign_response, "sign_assertion": sign_assertion, "audience": audience,
                        "encrypt": encrypt, "status": status, "name_id_format": name_id_format}  # fmt: skip

    def register_sp(self, metadata_xml: str) -> None:
        self.sp_metadata = [*self.sp_metadata, metadata_xml]

    # --- pysaml2's IdP ------------------------------------------------------------------------------------------
    def config(self, entity_id: str | None = None, display_name: str | None = None) -> IdPConfig:
        entity_id = entity_id or self.entity_id
        settings = {
            "entityid": entity_id,
            "xmlsec_binary": shutil.which("xmlsec1"),
            "key_file": self.key_file,
            "cert_file": self.cert_file,
            "service": {
                "idp": {
                    "name": display_name or self.name,
                    "endpoints": {"single_sign_on_service": [(f"{self.url}/sso/redirect", BINDING_HTTP_REDIRECT)]},
                    "name_id_format": [NAMEID_FORMAT_PERSISTENT, NAMEID_FORMAT_TRANSIENT],
                    "policy": {
                        "default": {
                            "lifetime": {"minutes": 5},
                            "name_form": NAME_FORMAT_URI,
                            "nameid_format": self.options["name_id_format"],
                        }
                    },
                    "ui_info": {"display_name": [{"text": display_name or self.name, "lang": "en"}]},
                }
            },
        }
        if self.sp_metadata and entity_id == self.entity_id:
            settings["metadata"] = {"inline": self.sp_metadata}
        return IdPConfig().load(settings)

    def server(self) -> Server:
        server = Server(config=self.config())
        if self.ident is None:
            self.ident = server.ident
        server.ident = self.ident  # one identity database: a persistent NameID stays the same across answers
        return server

    def metadata_xml(self) -> str:
        if not self.sign_metadata:
            return create_metadata_string(None, config=self.config()).decode()
        return self._signed([entity_descriptor(self.config())], name=None)

    def federation_xml(self) -> str:
        other = entity_descriptor(self.config(OTHER_IDP, "Other University"))
        return self._signed([entity_descriptor(self.config()), other], name="urn:test:federation")

    def _signed(self, descriptors, name) -> str:
        config = IdPConfig().load({"entityid": "urn:test:federation", "xmlsec_binary": shutil.which("xmlsec1"),
                                   "key_file": self.federation_key, "cert_file": self.federation_cert})  # fmt: skip
        _, document = entities_descriptor(descriptors, 24, name, "federation-1", True, security_context(config))
        return document

    def answer(self, key: str, username: str) -> tuple[str, dict[str, str]]:
        """The ACS URL and the form fields of the answer to the request behind login form `key`."""
        request = self.pending.pop(key)
        idp = self.server()
        args = idp.response_args(request.message, [BINDING_HTTP_POST])
        if self.options["status"]:
            response = idp.create_error_response(request.message.id, args["destination"], self.options["status"])
        else:
            if self.options["audience"]:
                args["sp_entity_id"] = self.options["audience"]
            if self.options["name_id_format"] == NAMEID_FORMAT_PERSISTENT:  # pairwise: per SP, stable per user
                args["name_id"] = idp.ident.persistent_nameid(username, args["sp_entity_id"], self.entity_id)
            response = idp.create_authn_response(
                identity=self.users[username],
                userid=username,
                authn={"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"},
                sign_response=self.options["sign_response"],
                sign_assertion=self.options["sign_assertion"],
                encrypt_assertion=self.options["encrypt"],
                encrypt_cert_assertion=None,
                **{k: v for k, v in args.items() if k != "binding"},
            )
        return args["destination"], {
            "SAMLResponse": base64.b64encode(str(response).encode()).decode(),
            "RelayState": request.relay_state or "",
        }

    # --- the WSGI application -----------------------------------------------------------------------------------
    def __call__(self, environ, start_response):
        path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        try:
            if path == "/metadata":
                return self._send(start_response, self.metadata_xml(), "application/samlmetadata+xml")
            if path == "/federation":
                return self._send(start_response, self.federation_xml(), "application/samlmetadata+xml")
            if path == "/sso/redirect":
                return self._send(start_response, self._login_page(query))
            if path == "/login" and method == "POST":
                size = int(environ.get("CONTENT_LENGTH") or 0)
                form = {k: v[0] for k, v in parse_qs(environ["wsgi.input"].read(size).decode()).items()}
                return self._send(start_response, self._post_page(*self.answer(form["key"], form["username"])))
        except Exception as error:  # noqa: BLE001 a test IdP: say what went wrong
            return self._send(start_response, f"IdP error: {error!r}", "text/plain", "500 Internal Server Error")
        return self._send(start_response, "not found", "text/plain", "404 Not Found")

    def _login_page(self, query: dict) -> str:
        request = self.server().parse_authn_request(query["SAMLRequest"], BINDING_HTTP_REDIRECT)
        request.relay_state = query.get("RelayState")
        key = request.message.id
        self.pending[key] = request
        return (
            f"<!doctype html><html lang='en'><head><title>{self.name}</title></head><body><h1>{self.name}</h1>"
            f"<form method='post' action='/login'><input type='hidden' name='key' value='{html.escape(key)}'>"
            "<label>User <input name='username'></label> <label>Password <input name='password' type='password'>"
            "</label> <button type='submit'>Sign in</button></form></body></html>"
        )

    @staticmethod
    def _post_page(action: str, fields: dict[str, str]) -> str:
        inputs = "".join(
            f"<input type='hidden' name='{k}' value='{html.escape(v, quote=True)}'>" for k, v in fields.items()
        )
        return (
            "<!doctype html><html lang='en'><head><title>Continue</title></head><body>"
            f"<form method='post' action='{html.escape(action)}'>{inputs}<button type='submit'>Continue</button>"
            "</form><script>document.forms[0].submit()</script></body></html>"
        )

    @staticmethod
    def _send(start_response, body: str, content_type="text/html; charset=utf-8", status="200 OK"):
        data = body.encode()
        start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(data)))])
        return [data]

    # --- without a browser --------------------------------------------------------------------------------------
    def sign_in(self, location: str, username: str) -> tuple[str, dict[str, str]]:
        """Follow the portal's redirect to the IdP, log in as `username`: the ACS URL and the fields posted to it."""
        page = requests.get(location, timeout=10)
        assert page.status_code == 200, page.text[:500]
        key = re.search(r"name='key' value='([^']+)'", page.text).group(1)
        answer = requests.post(urljoin(location, "/login"), data={"key": html.unescape(key), "username": username},
                               timeout=10)  # fmt: skip
        assert answer.status_code == 200, answer.text[:500]
        action = html.unescape(re.search(r"<form method='post' action='([^']+)'", answer.text).group(1))
        found = re.findall(r"name='([^']+)' value='([^']*)'", answer.text)
        fields = {html.unescape(name): html.unescape(value) for name, value in found}
        return action, fields


@contextmanager
def running_idp():
    """The IdP serving on 127.0.0.1 from a thread of the test process, stopped at the end."""
    require_xmlsec()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="saml-idp-") as directory:
        idp = SamlIdentityProvider(Path(directory), port)
        server = make_server("127.0.0.1", port, idp, server_class=_ThreadingServer, handler_class=_Quiet)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield idp
        finally:
            server.shutdown()
            server.server_close()
