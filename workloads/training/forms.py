"""The upload form of a training log on the workload page: parses what the person sends; training.ingest decides."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from workloads.records.models import Workload
from workloads.training.ingest import EARLIEST
from workloads.training.logs import FORMATS
from workloads.training.models import MAX_ACCELERATORS, MAX_SEQUENCE_LENGTH, RUN_NAME
from workloads.training.services import DEFAULT_RUN

MAX_UPLOAD_BYTES = 50 * 1024 * 1024


class DateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"


class LogUploadForm(forms.Form):
    log = forms.FileField(
        label=_("Training log"),
        help_text=_("The job's output as printed (Slurm's slurm-<job>.out, torchrun's log), up to 50 MB."),
    )
    run = forms.CharField(
        label=_("Run"),
        max_length=64,
        initial=DEFAULT_RUN,
        validators=[RUN_NAME],
        help_text=_("The same name continues a run (a restarted job); a new phase is a new run."),
    )
    phase = forms.ChoiceField(
        label=_("Phase of a new run"),
        choices=[("", _("The workload's"))] + list(Workload.Phase.choices),
        required=False,
    )
    format = forms.ChoiceField(label=_("Format"), required=False)
    sequence_length = forms.IntegerField(
        label=_("Sequence length"),
        min_value=1,
        max_value=MAX_SEQUENCE_LENGTH,
        required=False,
        help_text=_("Tokens per sample, when the log does not print it."),
    )
    accelerators = forms.IntegerField(
        label=_("Accelerators"),
        min_value=1,
        max_value=MAX_ACCELERATORS,
        required=False,
        help_text=_("GPUs or Trainium chips, when the log and the layout do not say."),
    )
    ended_at = forms.DateTimeField(
        label=_("Last line written at"),
        required=False,
        widget=DateTimeInput(format="%Y-%m-%dT%H:%M"),
        help_text=_("For logs that print no times (program timezone): the file's modification time."),
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [("", _("Detect"))] + [(name, p.label) for name, p in FORMATS.items()]

    def clean_ended_at(self):
        value = self.cleaned_data["ended_at"]
        if value is not None and not EARLIEST <= value <= timezone.now() + timedelta(days=1):
            raise forms.ValidationError(_("A time between 2000 and tomorrow."))
        return value

    def clean_log(self):
        upload = self.cleaned_data["log"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                _("The file is %(size).1f MB; the limit is 50 MB. Upload a part of it, or let the cluster's reporter "
                  "follow the log.") % {"size": upload.size / 2**20}
            )  # fmt: skip
        data = upload.read()
        if b"\x00" in data:
            raise forms.ValidationError(_("This is not a text file (it holds NUL bytes): upload the log as printed."))
        return data.decode("utf-8", errors="replace")
