"""Service accounts: machine users of one organization, for scripts that submit through the API.

A service account is a Django user that never signs in (no usable password; refused by the password backend and
the token endpoint that trades a password), a `ServiceAccount` row saying whose it is, and a membership in its one
organization as member or viewer, never admin. Scripts authenticate with its API tokens (tenants.tokens): access
is read from that membership on every request, like anyone's, so a person leaving the organization does not touch
the accounts they created. Disabling one revokes its tokens at once; nothing is ever deleted.
"""
