"""A second factor for staff accounts: an authenticator app (TOTP, django-otp's otp_totp) and ten single-use
recovery codes (otp_static). With STAFF_REQUIRE_2FA, program staff, Django staff and superusers set one up on their
next login and enter a code on every login; anyone with staff access may set one up anyway, and is then asked for
it the same way. Until the code is entered, the session reaches only the pages that settle it (middleware.py) and
the API refuses it (authentication.py); API tokens are not affected, but a password alone no longer buys one."""
