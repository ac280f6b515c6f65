"""The prefix family's wording of a Difference (oracle/difference.py): `ASPECT: LOCATION: expected E, got G`,
the aspect left out when the location already names it (or is empty)."""

from oracle.difference import Difference, plain, word

ASPECTS = ("return value", "extra hits", "missed hits", "hit cap", "hit blocks", "no false hit",
           "hash chaining", "null block", "live requests", "table length", "conservation", "ref count",
           "block_table", "free order", "release order", "hashed blocks", "index", "atomic failure")


def located(difference: Difference) -> str:
    aspect, location = difference.aspect, difference.location
    if not location or location.startswith(aspect) or f"{aspect}[" in location:
        return plain(difference)
    return f"{aspect}: {plain(difference)}"


word(dict.fromkeys(ASPECTS, located))
