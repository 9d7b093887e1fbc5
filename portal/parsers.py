"""The API's JSON parser. Kept apart from portal.api: DRF imports the parser classes named in its settings while
rest_framework.views is being imported, so this module must not import rest_framework.views (portal.api does)."""

from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.parsers import JSONParser


class ObjectJSONParser(JSONParser):
    """Every write takes a JSON object: `0`, `null`, `false` or a list is a 400, not a crash further in."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            raise exceptions.ParseError(
                _('Send a JSON object ({"field": value, …}), not %(kind)s.')
                % {"kind": type(data).__name__ if data is not None else "null"}
            )
        return data
