"""SCIM 2.0 provisioning (RFC 7643/7644): an institution's identity system (Entra ID, Okta, Keycloak, midPoint) creates,
updates and deactivates people and pushes group memberships, so a leaver loses access when they leave, not at their
next sign-in.

scim2-models (pydantic) is the data model: it parses and checks the resources and messages, applies PATCH operations,
parses and evaluates filters, and writes errors. This package adds what is the portal's: which attributes map to a
Django user (`schema.py`, `resources.py`), what deactivation takes away (`services.py`), which groups grant what
(`grants.py`, through tenants.sso.mapping), the bearer tokens of SCIM clients (`models.py`) and the endpoint
(`views.py`).
"""
