from django.urls import path

from workloads.outcomes import views
from workloads.outcomes.reports import views as reports

app_name = "outcomes"

urlpatterns = [
    path("outcomes/", views.program_outcomes, name="program"),
    path("outcomes/budget/", views.program_budget_edit, name="program-budget"),
    path("outcomes/milestones.csv", views.milestones_csv, name="milestones-csv"),
    path("outcomes/deliverables.csv", views.deliverables_csv, name="deliverables-csv"),
    path("orgs/<slug:org_slug>/outcomes/", views.org_outcomes, name="org"),
    path("orgs/<slug:org_slug>/outcomes/budget/", views.budget_edit, name="budget"),
    path("orgs/<slug:org_slug>/outcomes/review/", views.cycle_review, name="review"),
    path("orgs/<slug:org_slug>/milestones/new/", views.milestone_create, name="milestone-new"),
    path("orgs/<slug:org_slug>/deliverables/new/", views.deliverable_create, name="deliverable-new"),
    path("milestones/<int:pk>/", views.milestone_detail, name="milestone"),
    path("milestones/<int:pk>/edit/", views.milestone_edit, name="milestone-edit"),
    path("milestones/<int:pk>/report/", views.milestone_report, name="milestone-report"),
    path("milestones/<int:pk>/decide/", views.milestone_decide, name="milestone-decide"),
    path("deliverables/<int:pk>/edit/", views.deliverable_edit, name="deliverable-edit"),
    path("deliverables/<int:pk>/delete/", views.deliverable_delete, name="deliverable-delete"),
    path("outcomes/reports/", reports.report_list, name="reports"),
    path("outcomes/reports/generate/", reports.report_generate, name="report-generate"),
    path("outcomes/reports/recipients/", reports.recipient_add, name="recipient-add"),
    path("outcomes/reports/recipients/<int:pk>/remove/", reports.recipient_remove, name="recipient-remove"),
    path("reports/<int:pk>/report.xlsx", reports.report_xlsx, name="report-xlsx"),
    path("reports/<int:pk>/report.pdf", reports.report_pdf, name="report-pdf"),
]
