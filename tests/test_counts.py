"""Large counts in words, as each language says them ("2,600億", never "260.0 ビリオン")."""

import pytest
from django.utils import translation

from portal.templatetags.counts import count_words


@pytest.mark.parametrize(
    ("value", "english", "japanese"),
    [
        (260 * 10**9, "260 billion", "2,600億"),
        (15 * 10**12, "15 trillion", "15兆"),
        (7 * 10**9, "7 billion", "70億"),
        (1_500_000_000_000, "1.5 trillion", "1.5兆"),
        (132_500_000_000, "132 billion", "1,325億"),
        (8_000_000, "8 million", "800万"),
        (12_345, "12,345", "1.23万"),
        (999, "999", "999"),
        (999_600_000_000, "1 trillion", "9,996億"),  # rounding never shows "1,000 billion"
        (999_950_000, "1 billion", "10億"),
        (99_996_000, "100 million", "1億"),  # nor "10,000万"
        (None, "—", "—"),
    ],
)
def test_counts_read_as_each_language_says_them(value, english, japanese):
    with translation.override("en"):
        assert count_words(value) == english
    with translation.override("ja"):
        assert count_words(value) == japanese
