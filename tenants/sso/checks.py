"""`manage.py check` (and every start) names a provider entry that cannot be used, and a group rule that grants no
role the portal has."""

import shutil
from pathlib import Path

from django.conf import settings
from django.core.checks import Error, Warning, register

from tenants.sso import providers
from tenants.sso.mapping import Placement


@register()
def provider_settings(app_configs, **kwargs):
    found, errors = providers.configured()
    problems = [Error(f"SSO_PROVIDERS: {error}.", id="tenants.sso.E002") for error in errors]
    rules = {"OIDC_GROUP_MAP": settings.OIDC_GROUP_MAP}
    rules |= {f"provider {p.key!r}'s group_map": p.group_map for p in found if p.key != providers.LEGACY_KEY}
    for where, group_map in rules.items():
        problems += [
            Error(
                f"{where} maps {group!r} to {target!r}, which is not <org-slug>:<role> or staff:<staff-role> with a "
                "role the portal has.",
                id="tenants.sso.E001",
            )
            for group, target in group_map.items()
            if not isinstance(target, str) or not Placement().grant(target)
        ]
    return problems


@register()
def saml_settings(app_configs, **kwargs):
    """A SAML provider needs metadata, the xmlsec1 program, and both halves of the SP's key pair or neither."""
    problems = []
    saml = [p for p in providers.all() if p.protocol == "saml"]
    if saml and not shutil.which("xmlsec1"):
        problems.append(Error("SAML sign-in needs the xmlsec1 program (Debian: apt-get install xmlsec1).",
                              id="tenants.sso.E003"))  # fmt: skip
    for provider in saml:
        options, where = provider.options, f"SSO_PROVIDERS: SAML provider {provider.key!r}"
        if not (options.get("metadata_url") or options.get("metadata_file")):
            problems.append(Error(f"{where} has neither metadata_url nor metadata_file.", id="tenants.sso.E004"))
        files = {name: options.get(name) for name in ("metadata_file", "metadata_cert", "sp_key_file", "sp_cert_file")}
        for name, path in files.items():
            if path and not Path(str(path)).is_file():
                problems.append(Error(f"{where}: {name} {path!r} is not a file.", id="tenants.sso.E005"))
        if bool(files["sp_key_file"]) != bool(files["sp_cert_file"]):
            message = f"{where} needs both sp_key_file and sp_cert_file, or neither."
            problems.append(Error(message, id="tenants.sso.E006"))
        if not files["sp_key_file"]:
            problems.append(
                Warning(
                    f"{where} has no sp_key_file/sp_cert_file: its AuthnRequests are unsigned and the IdP cannot "
                    "encrypt assertions to it; federations (GakuNin, eduGAIN) require the SP's certificate.",
                    id="tenants.sso.W001",
                )
            )
        if not isinstance(options.get("attributes", {}), dict):
            problems.append(Error(f"{where}: attributes must be a JSON object.", id="tenants.sso.E007"))
    return problems
