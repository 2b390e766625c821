"""Hostile text for the schemathesis run (infra/schemathesis.sh loads it as SCHEMATHESIS_HOOKS).

A hook slips characters that hide or fake text (docs/api.md, "Text rules for names and titles")
into half of the generated bodies that carry a `displayName` or a `title`, at a drawn
position; a check then holds every answer to the rules: a body whose name or title still
holds such a character after trimming is never accepted (no 2xx). Hypothesis' own random
text reaches the same check, so generated control, format, private-use and separator
characters are held to it too.
"""

import unicodedata

import schemathesis
from hypothesis import strategies as st

FIELDS = ("displayName", "title")

# Bidi controls and marks, zero-width characters, a tag, fillers that render as nothing,
# spaces other than U+0020, a line separator, private use, the combining grapheme joiner. The
# zero width joiner is left out: between two emoji it is allowed.
HOSTILE = [
    "\u202e", "\u202a", "\u2066", "\u200e", "\u200b", "\u200c", "\u2060", "\ufeff",
    "\u00ad", "\U000e0041", "\u3164", "\u115f", "\u2800", "\u00a0", "\u3000", "\u2028",
    "\ue000", "\u034f",
]

# Rust's `str::trim` (the White_Space property): what the functions trim before the rules.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def refused(ch: str) -> bool:
    """Whether the text rules refuse `ch` wherever it stands (a subset of them: categories
    that are stable across Unicode versions, and the listed characters)."""
    if ch in HOSTILE:
        return True
    category = unicodedata.category(ch)
    if category in ("Cc", "Co", "Zl", "Zp"):
        return True
    if category == "Zs":
        return ch != " "
    # Format characters, but the joiner (emoji sequences) and tags (the three tag flags).
    return category == "Cf" and ch != "\u200d" and not "\U000e0020" <= ch <= "\U000e007f"


def spoiled(body: dict, choice: tuple) -> dict:
    ch, at = choice
    body = dict(body)
    for field in FIELDS:
        value = body.get(field)
        if isinstance(value, str):
            at = min(at, len(value))
            body[field] = value[:at] + ch + value[at:]
            break
    return body


@schemathesis.hook
def flatmap_body(ctx, body):
    if not isinstance(body, dict) or not any(isinstance(body.get(f), str) for f in FIELDS):
        return st.just(body)
    hostile = st.tuples(st.sampled_from(HOSTILE), st.integers(0, 60))
    return st.one_of(st.just(body), hostile.map(lambda choice: spoiled(body, choice)))


@schemathesis.check
def hostile_text_is_refused(ctx, response, case):
    """A name or title holding a refused character (after trimming) is never accepted."""
    if not 200 <= response.status_code < 300 or not isinstance(case.body, dict):
        return
    for field in FIELDS:
        value = case.body.get(field)
        if not isinstance(value, str):
            continue
        bad = [ch for ch in value.strip(WHITE_SPACE) if refused(ch)]
        if bad:
            raise AssertionError(
                f"{field} {value!r} holds U+{ord(bad[0]):04X}, which the text rules refuse, "
                f"yet the answer was {response.status_code}"
            )
