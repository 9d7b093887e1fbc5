"""The API's page: DRF's page-number pagination, with the wrapper's fields described in the OpenAPI schema like
every other field (tests/test_api_schema.py)."""

from rest_framework import pagination


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
