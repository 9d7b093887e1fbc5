from django.urls import path

from tenants.sso import logout, views

# The names mozilla-django-oidc looks up (the callback's builds the redirect URI registered at the provider).
urlpatterns = [
    path("oidc/authenticate/", views.SignInView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", views.CallbackView.as_view(), name="oidc_authentication_callback"),
    # OpenID Connect Back-Channel Logout: register <portal>/oidc/backchannel-logout/ at the provider.
    path("oidc/backchannel-logout/", logout.backchannel_logout, name="oidc-backchannel-logout"),
]
