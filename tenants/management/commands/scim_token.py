"""SCIM clients' tokens: `create --name "Entra ID (Sakura Univ.)" [--days 365] [--by username]` prints the key once;
`list` shows them all; `revoke PREFIX` stops one at once."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from tenants.scim import tokens
from tenants.scim.models import ScimToken


class Command(BaseCommand):
    help = "Create, list or revoke the bearer tokens of SCIM provisioning clients."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="action", required=True)
        create = commands.add_parser("create", help="Make a token and print its key (shown this once).")
        create.add_argument("--name", required=True, help="The SCIM client it is for, e.g. Entra ID (Sakura Univ.).")
        create.add_argument("--days", type=int, default=tokens.DEFAULT_DAYS, help="Days until it expires.")
        create.add_argument("--by", help="Username of the program staff member making it (for the audit trail).")
        commands.add_parser("list", help="List the tokens (never their keys).")
        revoke = commands.add_parser("revoke", help="Revoke a token: it stops working at once.")
        revoke.add_argument("prefix", help="The token's prefix, as `list` shows it (scim_ and 8 characters).")
        revoke.add_argument("--by", help="Username of the program staff member revoking it.")

    def handle(self, *args, action: str, **options):
        by = self._person(options.get("by"))
        if action == "create":
            try:
                token, key = tokens.issue_token(name=options["name"], expires_in_days=options["days"], by=by)
            except ValidationError as error:
                raise CommandError(" ".join(error.messages)) from None
            self.stdout.write(f"SCIM token {token.prefix}… for {token.name}, expires {token.expires_at:%Y-%m-%d}.")
            self.stdout.write("Its key, shown this once (configure it as the client's bearer token):")
            self.stdout.write(key)
        elif action == "list":
            for token in ScimToken.objects.all():
                self.stdout.write(
                    f"{token.prefix}\t{token.state}\t{token.name}\texpires {token.expires_at:%Y-%m-%d}"
                    f"\tlast used {token.last_used_at:%Y-%m-%d %H:%M}"
                    if token.last_used_at
                    else f"{token.prefix}\t{token.state}\t{token.name}\texpires {token.expires_at:%Y-%m-%d}\tnever used"
                )
        else:
            token = ScimToken.objects.filter(prefix=options["prefix"]).first()
            if token is None:
                raise CommandError(f"No SCIM token has the prefix {options['prefix']!r}.")
            tokens.revoke_token(token=token, by=by)
            self.stdout.write(f"SCIM token {token.prefix}… ({token.name}) revoked.")

    def _person(self, username: str | None):
        if not username:
            return None
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        return user
