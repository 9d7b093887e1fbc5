from django import forms
from django.contrib.auth import password_validation
from django.contrib.auth.forms import UsernameField
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.utils.translation import gettext_lazy as _

from tenants.models import Membership
from tenants.service_accounts.models import USERNAME_PREFIX as SERVICE_ACCOUNT_PREFIX


class InviteForm(forms.Form):
    email = forms.EmailField(label=_("Email"), max_length=254)
    role = forms.ChoiceField(label=_("Role"), choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=Membership.Role.choices)


class AccountForm(forms.Form):
    """A new local account for an invitee: the email is the invitation's."""

    username = UsernameField(label=_("Username"), max_length=150, validators=[UnicodeUsernameValidator()])
    first_name = forms.CharField(label=_("First name"), max_length=150, required=False)
    last_name = forms.CharField(label=_("Last name"), max_length=150, required=False)
    password1 = forms.CharField(
        label=_("Password"), strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )
    password2 = forms.CharField(
        label=_("Password again"), strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )

    def __init__(self, *args, email: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.email = email

    def clean_username(self):
        username = self.cleaned_data["username"]
        if username.lower().startswith(SERVICE_ACCOUNT_PREFIX):
            raise forms.ValidationError(
                _("Usernames starting with %(prefix)s are for service accounts: choose another.")
                % {"prefix": SERVICE_ACCOUNT_PREFIX}
            )
        return username

    def clean(self):
        data = super().clean()
        one, two = data.get("password1"), data.get("password2")
        if one and two and one != two:
            self.add_error("password2", _("The two passwords differ."))
        elif one:
            from django.contrib.auth import get_user_model

            probe = get_user_model()(
                username=data.get("username", ""),
                email=self.email,
                first_name=data.get("first_name", ""),
                last_name=data.get("last_name", ""),
            )
            try:
                password_validation.validate_password(one, probe)
            except forms.ValidationError as error:
                self.add_error("password1", error)
        return data
