"""Outcome pages: an organization's milestones, deliverables and budget; one milestone with its history; the
program's view across organizations (staff); the forms; CSV exports. Tenant data is entered through
tenants.access or `visible_to(user)`: another organization's milestone or deliverable is a 404."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from portal.forms import apply_errors
from portal.pages import paginate, render_form
from tenants.access import (
    get_org_access_or_404,
    is_program_manager,
    require_program_manager,
    require_program_staff,
    visible_organizations,
)
from tenants.audit_labels import link
from tenants.models import AuditEvent, Program
from workloads.outcomes import exports, review
from workloads.outcomes.budget import standings
from workloads.outcomes.forms import BudgetForm, DecisionForm, DeliverableForm, MilestoneForm, ReportForm, ReviewForm
from workloads.outcomes.milestones import attention_first, milestone_states
from workloads.outcomes.models import Budget, BudgetAlert, Deliverable, Milestone, Report
from workloads.outcomes.services import (
    MEMBERS_ONLY,
    confirm_milestone,
    create_milestone,
    drop_milestone,
    record_deliverable,
    remove_deliverable,
    report_milestone,
    return_milestone,
    set_budget,
    update_deliverable,
    update_milestone,
)

PAGE_SIZE = 25


@login_required
@require_GET
def org_outcomes(request, org_slug: str):
    """An organization's milestones (what needs attention first), its deliverables and its budget."""
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    program = Program.objects.first()
    milestones = Milestone.objects.for_org(org).select_related("workload")
    deliverables = Deliverable.objects.for_org(org).select_related("milestone", "model", "run")
    standing = None
    if program is not None:
        rows, _whole = standings(program, organizations=[org], with_program=False)
        standing = rows[0]
    alerts = BudgetAlert.objects.for_org(org).filter(cleared_at__isnull=True)
    alerts = alerts.select_related("organization", "budget__program")
    return render(
        request,
        "workloads/outcomes/org.html",
        {
            "org": org,
            "program": program,
            "states": attention_first(milestone_states(milestones)),
            "page": paginate(request, deliverables, PAGE_SIZE),
            "standing": standing,
            "alerts": list(alerts),
            "reports": Report.objects.for_org(org).defer("xlsx", "pdf")[:24],
            "review_open": review.is_open(program, today=timezone.localdate()),
            "can_manage": access.is_program_manager,
            "can_record": access.acts,
        },
    )


@login_required
@require_GET
def program_outcomes(request):
    """Program staff: every organization's budget and forecast, the milestones needing attention, the latest
    deliverables."""
    require_program_staff(request.user)
    program = Program.objects.first()
    organizations = list(visible_organizations(request.user).order_by("name"))
    rows, whole = standings(program, organizations=organizations, with_program=True) if program else ([], None)
    open_milestones = Milestone.objects.visible_to(request.user).exclude(
        status__in=[Milestone.Status.MET, Milestone.Status.DROPPED]
    )
    states = attention_first(milestone_states(open_milestones.select_related("organization", "workload")))
    review_open = review.is_open(program, today=timezone.localdate())
    reviews = review.states(program, organizations) if program else []
    deliverables = (
        Deliverable.objects.visible_to(request.user)
        .select_related("organization", "model", "milestone", "run")
        .order_by("-released_on", "-pk")
    )
    return render(
        request,
        "workloads/outcomes/program.html",
        {
            "program": program,
            "rows": rows,
            "whole": whole,
            "page": paginate(request, states, PAGE_SIZE),
            "deliverables": deliverables[:20],
            "alerts": BudgetAlert.objects.visible_to(request.user)
            .filter(cleared_at__isnull=True)
            .select_related("organization", "budget__program"),
            "can_manage": is_program_manager(request.user),
            "review_open": review_open,
            # Shown while the review is open, and after it once anyone confirmed (who did and who did not).
            "reviews": reviews if review_open or any(s.done for s in reviews) else [],
        },
    )


def _visible_milestone(request, pk: int) -> Milestone:
    milestones = Milestone.objects.visible_to(request.user).select_related(
        "organization", "workload", "reported_by", "confirmed_by"
    )
    return get_object_or_404(milestones, pk=pk)


def _milestone_page(request, milestone: Milestone, *, report=None, decision=None, status: int = 200):
    access = get_org_access_or_404(request.user, milestone.organization.slug)
    (state,) = milestone_states([milestone])
    events = AuditEvent.objects.visible_to(request.user).filter(target_type="milestone", target_id=milestone.pk)
    events = list(events.select_related("actor"))
    link(events, request.user)
    can_report = access.acts and not milestone.measured and milestone.status == Milestone.Status.OPEN
    can_decide = access.is_staff and milestone.status not in (Milestone.Status.MET, Milestone.Status.DROPPED)
    return render(
        request,
        "workloads/outcomes/milestone.html",
        {
            "milestone": milestone,
            "org": milestone.organization,
            "state": state,
            "events": events,
            "deliverables": milestone.deliverables.all(),
            "report_form": report if report is not None else (ReportForm() if can_report else None),
            "decision_form": decision if decision is not None else (DecisionForm() if can_decide else None),
            "can_manage": access.is_program_manager,
        },
        status=status,
    )


@login_required
@require_GET
def milestone_detail(request, pk: int):
    return _milestone_page(request, _visible_milestone(request, pk))


milestone_detail.tenant_model = Milestone


@login_required
@require_POST
def milestone_report(request, pk: int):
    milestone = _visible_milestone(request, pk)
    access = get_org_access_or_404(request.user, milestone.organization.slug)
    access.require(access.acts, str(MEMBERS_ONLY))
    form = ReportForm(request.POST)
    if form.is_valid():
        try:
            report_milestone(user=request.user, milestone=milestone, evidence=form.cleaned_data["evidence"])
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return redirect("outcomes:milestone", pk=milestone.pk)
    return _milestone_page(request, milestone, report=form, status=400)


milestone_report.tenant_model = Milestone


@login_required
@require_POST
def milestone_decide(request, pk: int):
    milestone = _visible_milestone(request, pk)
    require_program_staff(request.user)
    form = DecisionForm(request.POST)
    if form.is_valid():
        decide = {"confirm": confirm_milestone, "return": return_milestone, "drop": drop_milestone}
        try:
            decide[form.cleaned_data["decision"]](
                user=request.user, milestone=milestone, comment=form.cleaned_data["comment"]
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return redirect("outcomes:milestone", pk=milestone.pk)
    return _milestone_page(request, milestone, decision=form, status=400)


milestone_decide.tenant_model = Milestone


def _saved(request, form, save) -> bool:
    """A posted, valid form handed to its service (`save(data)`); the service's ValidationError shown on the form.
    True when it saved."""
    if request.method != "POST" or not form.is_valid():
        return False
    try:
        save({name: form.cleaned_data[name] for name in form.fields})
    except ValidationError as error:
        apply_errors(form, error)
        return False
    return True


def _milestone_form(request, org, milestone: Milestone | None):
    require_program_manager(request.user)
    form = MilestoneForm(request.POST or None, organization=org, instance=milestone)
    saved = []

    def save(data):
        if milestone is None:
            saved.append(create_milestone(user=request.user, organization=org, data=data))
        else:
            saved.append(update_milestone(user=request.user, milestone=milestone, data=data))

    if _saved(request, form, save):
        return redirect("outcomes:milestone", pk=saved[0].pk)
    context = {"form": form, "org": org, "milestone": milestone}
    return render_form(request, "workloads/outcomes/milestone_form.html", context, invalid=bool(form.errors))


@login_required
def milestone_create(request, org_slug: str):
    return _milestone_form(request, get_org_access_or_404(request.user, org_slug).organization, None)


@login_required
def milestone_edit(request, pk: int):
    milestone = _visible_milestone(request, pk)
    return _milestone_form(request, milestone.organization, milestone)


milestone_edit.tenant_model = Milestone


def _deliverable_form(request, access, deliverable: Deliverable | None):
    access.require(access.acts, str(MEMBERS_ONLY))
    org = access.organization
    form = DeliverableForm(request.POST or None, organization=org, instance=deliverable)

    def save(data):
        if deliverable is None:
            record_deliverable(user=request.user, organization=org, data=data)
        else:
            update_deliverable(user=request.user, deliverable=deliverable, data=data)

    if _saved(request, form, save):
        return redirect("outcomes:org", org_slug=org.slug)
    context = {"form": form, "org": org, "deliverable": deliverable}
    return render_form(request, "workloads/outcomes/deliverable_form.html", context, invalid=bool(form.errors))


@login_required
def deliverable_create(request, org_slug: str):
    return _deliverable_form(request, get_org_access_or_404(request.user, org_slug), None)


def _visible_deliverable(request, pk: int) -> Deliverable:
    return get_object_or_404(Deliverable.objects.visible_to(request.user).select_related("organization"), pk=pk)


@login_required
def deliverable_edit(request, pk: int):
    deliverable = _visible_deliverable(request, pk)
    return _deliverable_form(request, get_org_access_or_404(request.user, deliverable.organization.slug), deliverable)


deliverable_edit.tenant_model = Deliverable


@login_required
@require_POST
def deliverable_delete(request, pk: int):
    deliverable = _visible_deliverable(request, pk)
    slug = deliverable.organization.slug
    remove_deliverable(user=request.user, deliverable=deliverable)
    return redirect("outcomes:org", org_slug=slug)


deliverable_delete.tenant_model = Deliverable


def _budget_form(request, program: Program, org, back: str):
    require_program_manager(request.user)
    budget = Budget.objects.visible_to(request.user).filter(program=program, organization=org).first()
    form = BudgetForm(request.POST or None, instance=budget)
    if _saved(request, form, lambda data: set_budget(user=request.user, program=program, organization=org, data=data)):
        return redirect(back)
    context = {"form": form, "org": org, "program": program, "budget": budget, "back": back}
    return render_form(request, "workloads/outcomes/budget_form.html", context, invalid=bool(form.errors))


@login_required
def budget_edit(request, org_slug: str):
    org = get_org_access_or_404(request.user, org_slug).organization
    require_program_manager(request.user)
    program = get_object_or_404(Program.objects.all()[:1])
    return _budget_form(request, program, org, back=reverse("outcomes:org", args=[org.slug]))


@login_required
def program_budget_edit(request):
    require_program_manager(request.user)
    program = get_object_or_404(Program.objects.all()[:1])
    return _budget_form(request, program, None, back=reverse("outcomes:program"))


@login_required
@require_GET
def milestones_csv(request):
    milestones = Milestone.objects.visible_to(request.user).select_related("organization", "workload")
    states = milestone_states(milestones.order_by("organization__name", "due_on", "pk"))
    return exports.milestones_csv(states, stamp=timezone.localdate().isoformat())


@login_required
@require_GET
def deliverables_csv(request):
    deliverables = Deliverable.objects.visible_to(request.user).select_related("organization", "run")
    ordered = deliverables.order_by("organization__name", "-released_on", "pk")
    return exports.deliverables_csv(ordered, stamp=timezone.localdate().isoformat())


@login_required
def cycle_review(request, org_slug: str):
    """The organization's cycle review: its members, milestones and deliverables on one page, and the admin's
    confirmation that they are right."""
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    program = Program.objects.first()
    form = ReviewForm(request.POST or None)
    can_confirm = access.membership is not None and access.membership.is_admin
    if request.method == "POST":
        access.require(can_confirm, str(review.ADMINS_ONLY))
        if form.is_valid():
            try:
                review.confirm(
                    user=request.user, program=program, organization=org, comment=form.cleaned_data["comment"]
                )
            except ValidationError as error:
                apply_errors(form, error)
            else:
                return redirect("outcomes:review", org_slug=org.slug)
    state = review.states(program, [org])[0] if program else None
    context = {
        "org": org,
        "program": program,
        "state": state,
        "open": review.is_open(program, today=timezone.localdate()),
        "opens_on": review.opens_on(program) if program else None,
        "members": org.memberships.select_related("user").order_by("role", "user__username"),
        "states": milestone_states(Milestone.objects.for_org(org).select_related("workload")),
        "deliverables": Deliverable.objects.for_org(org).select_related("milestone", "model", "run"),
        "form": form if can_confirm else None,
    }
    return render_form(request, "workloads/outcomes/review.html", context, invalid=bool(form.errors))
