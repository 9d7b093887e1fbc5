from django.urls import path

from workloads.health import views

app_name = "health"

urlpatterns = [
    path("clusters/<int:pk>/health/", views.health_board, name="board"),
    path("program/incidents/", views.incidents, name="incidents"),
    path("program/health-rules/", views.health_rules, name="rules"),
]
