"""Failed-login limits, per account and per client address, on the login page and the API token endpoint; password
reset by email through the same limits (reset.py).

django-axes counts the failures (its AxesStandaloneBackend refuses a locked-out login before the password is
checked, so the right password is refused too) and keeps them in its tables, shown in Django admin; this
package decides how a lockout reads to a person and to a script, and where the client address comes from.
"""
