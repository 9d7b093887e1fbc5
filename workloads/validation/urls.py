from django.urls import path

from workloads.validation import views

app_name = "validation"

urlpatterns = [
    path("clusters/<int:pk>/interconnect/", views.interconnect, name="cluster"),
]
