from django.urls import path

from tenants.twofactor import views

urlpatterns = [
    path("account/two-factor/", views.overview, name="two-factor"),
    path("account/two-factor/setup/", views.setup, name="two-factor-setup"),
    path("account/two-factor/verify/", views.verify, name="two-factor-verify"),
    path("account/two-factor/recovery-codes/", views.recovery_codes, name="two-factor-recovery-codes"),
    path("program/staff/two-factor/", views.staff_list, name="staff-two-factor"),
    path("program/staff/<int:user_id>/two-factor/reset/", views.staff_reset, name="staff-two-factor-reset"),
]
