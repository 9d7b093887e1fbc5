"""The identifiers a deliverable carries, checked by the rule of whoever issues them: a Hugging Face repository id
by huggingface_hub's own `validate_repo_id` (plus the organization/name form a release has), a DOI by the DOI
Handbook's syntax (prefix "10." and a registrant code, "/", a suffix), an arXiv id by arXiv's own identifier
scheme (YYMM.NNNNN since 2015, with an optional version; the old archive/YYMMNNN form too)."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from huggingface_hub.utils import HFValidationError, validate_repo_id

DOI = re.compile(r"^10\.\d{4,9}(\.\d+)*/\S+$")
ARXIV = re.compile(r"^(\d{4}\.\d{4,5}|[a-z-]+(\.[A-Z]{2})?/\d{7})(v\d+)?$")


def validate_hf_repo_id(value: str) -> None:
    if value.count("/") != 1:
        raise ValidationError(
            _("Enter the repository as organization/name, e.g. llm-jp/llm-jp-3-13b."), code="hf_repo_id"
        )
    try:
        validate_repo_id(value)
    except HFValidationError:
        raise ValidationError(
            _(
                "Not a Hugging Face repository id: letters, digits, '-', '_' and '.' only, at most 96 characters on "
                "each side of the '/', no '--' or '..', not starting or ending with '-' or '.'."
            ),
            code="hf_repo_id",
        ) from None


def validate_doi(value: str) -> None:
    if not DOI.match(value.removeprefix("https://doi.org/")):
        raise ValidationError(_("Enter a DOI such as 10.48550/arXiv.2407.03963."), code="doi")


def validate_arxiv_id(value: str) -> None:
    if not ARXIV.match(value.removeprefix("arXiv:")):
        raise ValidationError(_("Enter an arXiv id such as 2407.03963 or 2407.03963v2."), code="arxiv_id")
