"""The user's own API tokens page: create (the key shown once), list, revoke."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from tenants.logins.lockout import client_address
from tenants.tokens import services
from tenants.tokens.forms import TokenForm
from tenants.tokens.models import ApiToken


@login_required
@never_cache  # the page that shows a new key must not be kept by any cache
def token_list(request):
    form = TokenForm(request.POST or None)
    new = None
    if request.method == "POST" and form.is_valid():
        try:
            token, key = services.create_token(
                user=request.user,
                name=form.cleaned_data["name"],
                expires_in_days=form.cleaned_data["expires_in_days"],
                via=ApiToken.Via.PAGE,
                address=client_address(request),
            )
        except ValidationError as error:
            form.add_error(None, error)
        else:
            # Rendered, not redirected: the key must not wait in a session or a URL for the next page.
            new, form = {"token": token, "key": key}, TokenForm()
    tokens = ApiToken.objects.for_user(request.user).select_related("revoked_by")
    context = {"form": form, "new": new, "tokens": tokens, "max_days": services.MAX_DAYS}
    return render(request, "tenants/tokens/token_list.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def token_revoke(request, pk: int):
    token = get_object_or_404(ApiToken.objects.for_user(request.user), pk=pk)  # another user's: 404
    services.revoke_token(token=token, by=request.user)
    messages.success(request, _("Token “%(name)s” revoked: it no longer works.") % {"name": token.name})
    return redirect("account-tokens")
