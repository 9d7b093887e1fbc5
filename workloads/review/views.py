"""The weekly review page (program staff): per org, open and stale cases, cases opened and resolved, workloads
changed; the meeting record with its action items, and earlier weeks' open items carried forward."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from portal.forms import apply_errors
from portal.pages import fragment_for, is_fragment, render_form, render_page
from portal.periods import iso_week, parse_iso_week, this_week
from portal.tables import sort_table
from tenants.access import require_program_staff, visible_organizations
from tenants.cycle import program_cycle
from workloads.review.figures import build_week
from workloads.review.forms import ActionItemForm, ReviewMeetingForm
from workloads.review.models import ActionItem
from workloads.review.services import STAFF_ONLY, add_action_item, save_review_meeting, set_action_item_done
from workloads.review.tables import ReviewTable
from workloads.support.models import SupportCase

TEMPLATE = "workloads/review/review_week.html"


def _week(week: str):
    try:
        week_start = parse_iso_week(week)
    except ValueError:
        raise Http404(_("No such week.")) from None
    if week_start > this_week():
        raise Http404(_("That week has not started yet."))
    if week_start not in program_cycle():
        raise Http404(_("No such week."))  # a page address: a week the program cannot mean is not found
    return week_start


@login_required
@require_GET
def review_current(request):
    require_program_staff(request.user, STAFF_ONLY)
    return redirect("review:week", week=iso_week(this_week()))


def _review_context(request, week_start, *, meeting_form=None, item_form=None) -> dict:
    organizations = visible_organizations(request.user)
    review = build_week(week_start=week_start, organizations=organizations)
    meeting = review.meeting
    if meeting_form is None:
        initial = {}
        if meeting is not None:
            initial = {
                "attendees": [a.pk for a in meeting.attendees.all()],
                "other_attendees": meeting.other_attendees,
                "minutes": meeting.minutes,
            }
        meeting_form = ReviewMeetingForm(initial=initial)
    cases = SupportCase.objects.visible_to(request.user)
    return {
        "review": review,
        "org_table": sort_table(request, ReviewTable(review.organizations)),
        "meeting_form": meeting_form,
        "item_form": item_form or ActionItemForm(organizations=organizations.order_by("name"), cases=cases),
        "previous_week": iso_week(week_start - timedelta(days=7)),
        "next_week": iso_week(week_start + timedelta(days=7)) if week_start < this_week() else None,
        "this_week": iso_week(this_week()),
    }


@login_required
@require_GET
def review_week(request, week: str):
    """The weekly review (staff): per org, open and stale cases, cases opened and resolved, workloads
    changed; the meeting record with its action items, and earlier weeks' open items carried forward."""
    require_program_staff(request.user, STAFF_ONLY)
    week_start = _week(week)
    fragment = fragment_for(request, "meeting", by_target={"review-orgs": "review-orgs"})  # a header sorts in place
    return render_page(request, TEMPLATE, _review_context(request, week_start), fragment=fragment)


@login_required
@require_POST
def review_meeting_save(request, week: str):
    require_program_staff(request.user, STAFF_ONLY)
    week_start = _week(week)
    form = ReviewMeetingForm(request.POST)
    if form.is_valid():
        try:
            save_review_meeting(user=request.user, week_start=week_start, **form.cleaned_data)
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return _after_review_post(request, week_start)
    context = _review_context(request, week_start, meeting_form=form)
    return render_form(request, TEMPLATE, context, fragment="meeting", invalid=True)


ITEM_ERROR_ALIASES = {"title": "case_title", "category": "case_category", "severity": "case_severity"}


@login_required
@require_POST
def review_action_item_add(request, week: str):
    require_program_staff(request.user, STAFF_ONLY)
    week_start = _week(week)
    organizations = visible_organizations(request.user).order_by("name")
    form = ActionItemForm(request.POST, organizations=organizations, cases=SupportCase.objects.visible_to(request.user))
    if form.is_valid():
        data = form.cleaned_data
        try:
            add_action_item(
                user=request.user,
                week_start=week_start,
                text=data["text"],
                organization=data["organization"],
                owner=data["owner"],
                due_on=data["due_on"],
                case=data["case"],
                new_case=form.new_case,
            )
        except ValidationError as error:
            apply_errors(form, error, ITEM_ERROR_ALIASES)
        else:
            return _after_review_post(request, week_start)
    context = _review_context(request, week_start, item_form=form)
    return render_form(request, TEMPLATE, context, fragment="meeting", invalid=True)


@login_required
@require_POST
def review_action_item_status(request, pk: int):
    require_program_staff(request.user, STAFF_ONLY)
    item = get_object_or_404(ActionItem.objects.visible_to(request.user).select_related("meeting"), pk=pk)
    set_action_item_done(user=request.user, item=item, done=request.POST.get("done") == "1")
    week = request.POST.get("week", "")
    try:
        week_start = _week(week)
    except Http404:
        week_start = item.meeting.week_start
    return _after_review_post(request, week_start)


def _after_review_post(request, week_start):
    if is_fragment(request):
        return render_page(request, TEMPLATE, _review_context(request, week_start), fragment="meeting")
    return redirect(reverse("review:week", kwargs={"week": iso_week(week_start)}))
