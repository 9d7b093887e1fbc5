from django.urls import path

from workloads.reporting import views

app_name = "reporting"

urlpatterns = [
    path("clusters/<int:pk>/reporter/", views.reporter, name="cluster"),
    path("reporter-tokens/<int:pk>/revoke/", views.revoke, name="revoke"),
    path("reporter/fmp_reporter.py", views.script, name="script"),
    path("reporter/fmp_progress.py", views.progress_script, name="progress-script"),
]
