from django.urls import path

from workloads.review import views

app_name = "review"

urlpatterns = [
    path("review/", views.review_current, name="current"),
    path("review/<str:week>/", views.review_week, name="week"),
    path("review/<str:week>/meeting/", views.review_meeting_save, name="meeting-save"),
    path("review/<str:week>/action-items/", views.review_action_item_add, name="action-item-add"),
    path("review/action-items/<int:pk>/status/", views.review_action_item_status, name="action-item-status"),
]
