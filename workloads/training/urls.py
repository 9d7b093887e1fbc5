from django.urls import path

from workloads.training import views

app_name = "training"

urlpatterns = [
    path("workloads/<int:pk>/progress/upload/", views.log_upload, name="upload"),
    path("workloads/<int:pk>/progress.csv", views.progress_export, name="export"),
]
