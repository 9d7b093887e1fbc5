"""The program's landing page: the week at a glance for program staff."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from portal.periods import today
from tenants.access import require_program_staff
from tenants.models import Program
from workloads.program.week import glance
from workloads.usage.periods import Period


def weeks(day) -> list[Period]:
    """The last closed ISO week and this one so far."""
    monday = day - timedelta(days=day.weekday())
    return [
        Period("week", monday - timedelta(days=7), monday - timedelta(days=1)),
        Period("week", monday, monday + timedelta(days=6)),
    ]


@login_required
@require_GET
def program_overview(request):
    """The program's Monday question: who used what we gave them, what did it cost, what is broken."""
    require_program_staff(request.user, _("The program overview is for program staff."))
    program = Program.objects.first()
    day = today()
    context = {
        "glance": glance(user=request.user, program=program, weeks=weeks(day), today=day, as_of=timezone.now()),
        "program": program,
        "today": day,
    }
    return render(request, "workloads/program/landing.html", context)
