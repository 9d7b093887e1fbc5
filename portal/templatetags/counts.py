"""Large counts (parameters, tokens) in words, as people say them in the reader's language: "260 billion" in
English, "2,600億" in Japanese, which groups digits by ten thousands (万, 億, 兆), not thousands."""

from __future__ import annotations

from django import template
from django.utils.translation import get_language

register = template.Library()

ENGLISH = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"))
MYRIADS = ((10**12, "兆"), (10**8, "億"), (10**4, "万"))


def _number(value: float) -> str:
    """Three significant digits below 100, whole numbers above, no trailing zeros, grouped: 2,600 · 1.5 · 13.2."""
    text = f"{value:,.{max(0, 3 - len(str(int(value))))}f}" if value < 100 else f"{round(value):,}"
    return text.rstrip("0").rstrip(".") if "." in text else text


@register.filter
def count_words(value) -> str:
    if value in (None, ""):
        return "—"
    value = int(value)
    myriads = (get_language() or "").startswith(("ja", "zh"))
    scales = MYRIADS if myriads else ENGLISH  # largest first
    for index, (scale, word) in enumerate(scales):
        if value >= scale:
            text = _number(value / scale)
            if index and float(text.replace(",", "")) >= scales[index - 1][0] / scale:
                # Rounded up to the next unit: 999,600,000,000 is "1 trillion", not "1,000 billion".
                scale, word = scales[index - 1]
                text = _number(value / scale)
            return f"{text}{word}" if myriads else f"{text} {word}"
    return f"{value:,}"


@register.filter
def count_of(counts: dict, key) -> int:
    """`counts[key]`, or 0: a count a context processor gave per object (the top bar's, per organization)."""
    return (counts or {}).get(key, 0)
