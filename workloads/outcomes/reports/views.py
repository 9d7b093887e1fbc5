"""The reports pages: the program's list (staff), generating a report again (program managers), the recipients,
and each report's files. A tenant reads its own organization's reports on its outcomes page; another
organization's report, or the program's, is a 404 to it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_POST

from portal.pages import paginate
from tenants.access import is_program_manager, require_program_manager, require_program_staff
from tenants.models import Program
from workloads.outcomes.models import Report, ReportRecipient
from workloads.outcomes.reports import services
from workloads.outcomes.reports.forms import GenerateForm, RecipientForm
from workloads.outcomes.reports.services import XLSX_TYPE

PAGE_SIZE = 50


def _page(request, program, *, generate=None, recipient=None, status=200):
    reports = Report.objects.visible_to(request.user).select_related("organization").defer("xlsx", "pdf")
    recipients = ReportRecipient.objects.visible_to(request.user).select_related("organization")
    manager = is_program_manager(request.user) and program is not None
    return render(
        request,
        "workloads/outcomes/reports.html",
        {
            "program": program,
            "page": paginate(request, reports, PAGE_SIZE),
            "recipients": recipients,
            "generate_form": generate
            or (GenerateForm(program=program, user=request.user) if manager and program else None),
            "recipient_form": recipient or (RecipientForm(user=request.user) if manager and program else None),
            "can_manage": manager,
        },
        status=status,
    )


@login_required
@require_GET
def report_list(request):
    require_program_staff(request.user)
    return _page(request, Program.objects.first())


@login_required
@require_POST
def report_generate(request):
    require_program_manager(request.user)
    program = get_object_or_404(Program.objects.all()[:1])
    form = GenerateForm(request.POST, program=program, user=request.user)
    if not form.is_valid():
        return _page(request, program, generate=form, status=400)
    data = form.cleaned_data
    first_day = data["month"] if data["kind"] == Report.Kind.MONTHLY else program.starts_on
    services.generate(
        program=program,
        organization=data["organization"],
        kind=data["kind"],
        first_day=first_day,
        language=data["language"],
        user=request.user,
    )
    return redirect("outcomes:reports")


@login_required
@require_POST
def recipient_add(request):
    require_program_manager(request.user)
    program = get_object_or_404(Program.objects.all()[:1])
    form = RecipientForm(request.POST, user=request.user)
    if form.is_valid():
        recipient = form.save(commit=False)
        recipient.program, recipient.organization = program, form.cleaned_data["organization"]
        try:
            recipient.save()
        except IntegrityError:
            form.add_error("email", _("This address already receives these reports."))
        else:
            return redirect("outcomes:reports")
    return _page(request, program, recipient=form, status=400)


@login_required
@require_POST
def recipient_remove(request, pk: int):
    recipient = get_object_or_404(ReportRecipient.objects.visible_to(request.user), pk=pk)
    require_program_manager(request.user)
    recipient.delete()
    return redirect("outcomes:reports")


recipient_remove.tenant_model = ReportRecipient


def _visible_report(request, pk: int) -> Report:
    return get_object_or_404(Report.objects.visible_to(request.user).select_related("program", "organization"), pk=pk)


@login_required
@require_GET
def report_xlsx(request, pk: int):
    report = _visible_report(request, pk)
    response = HttpResponse(bytes(report.xlsx), content_type=XLSX_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{report.file_stem}.xlsx"'
    return response


report_xlsx.tenant_model = Report


@login_required
@require_GET
def report_pdf(request, pk: int):
    report = _visible_report(request, pk)
    if report.pdf is None:
        return HttpResponse(report.pdf_error, status=404, content_type="text/plain; charset=utf-8")
    response = HttpResponse(bytes(report.pdf), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{report.file_stem}.pdf"'
    return response


report_pdf.tenant_model = Report
