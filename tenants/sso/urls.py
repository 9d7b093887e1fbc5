from django.urls import path

from tenants.sso import logout, views
from tenants.sso.saml import views as saml

# The names mozilla-django-oidc looks up (the callback's builds the redirect URI registered at the provider); SAML's
# each name a provider of SSO_PROVIDERS (tenants/sso/saml/).
urlpatterns = [
    path("oidc/authenticate/", views.SignInView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", views.CallbackView.as_view(), name="oidc_authentication_callback"),
    # OpenID Connect Back-Channel Logout: register <portal>/oidc/backchannel-logout/ at the provider.
    path("oidc/backchannel-logout/", logout.backchannel_logout, name="oidc-backchannel-logout"),
    path("saml/<slug:provider>/login/", saml.login, name="saml-login"),
    path("saml/<slug:provider>/acs/", saml.acs, name="saml-acs"),
    path("saml/<slug:provider>/metadata/", saml.sp_metadata, name="saml-metadata"),
]
