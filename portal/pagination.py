"""The API's page: DRF's page-number pagination, with the wrapper's fields described in the OpenAPI schema like
every other field (tests/test_api_schema.py)."""

from functools import partial

from rest_framework import pagination

from portal.pages import BoundedPaginator


class PageNumberPagination(pagination.PageNumberPagination):
    def get_paginated_response_schema(self, schema: dict) -> dict:
        response = super().get_paginated_response_schema(schema)
        descriptions = {
            "count": "Objects in the whole list (with the filters applied), on every page together.",
            "next": "URL of the next page; null on the last page.",
            "previous": "URL of the previous page; null on the first page.",
            "results": f"This page's objects, at most {self.page_size}; ?page=N gives page N.",
        }
        for name, description in descriptions.items():
            response["properties"][name]["description"] = description
        return response


class BoundedPageNumberPagination(PageNumberPagination):
    """Page-number pages of a list that may hold a whole table (every allocation, every request): the count stops
    a few pages past the one asked for (portal.pages.BoundedPaginator) instead of counting every row, and
    `count_exact` says whether `count` is the whole list's size or only a lower bound."""

    def paginate_queryset(self, queryset, request, view=None):
        wanted = request.query_params.get(self.page_query_param)
        self.django_paginator_class = partial(BoundedPaginator, wanted=wanted)
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data):
        response = super().get_paginated_response(data)
        exact = self.page.paginator.count_is_exact
        response.data = {"count": response.data["count"], "count_exact": exact, **response.data}
        return response

    def get_paginated_response_schema(self, schema: dict) -> dict:
        response = super().get_paginated_response_schema(schema)
        response["properties"]["count"]["description"] = (
            "Objects in the whole list (with the filters applied) when count_exact is true; otherwise a lower "
            "bound: the list holds more than count − 1 objects, counted only a few pages past this one."
        )
        response["properties"] = {
            "count": response["properties"].pop("count"),
            "count_exact": {
                "type": "boolean",
                "description": "True when count is the whole list's size; false when the list is longer than "
                "was counted (page on with next until it is null).",
            },
            **response["properties"],
        }
        response["required"] = ["count", "count_exact", "results"]
        return response
