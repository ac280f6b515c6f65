"""The prefix family's wording of a Difference (oracle/difference.py): `ASPECT: LOCATION: expected E, got G`,
the aspect left out when the location already names it (or is empty)."""

from oracle.difference import Difference, plain, word

ASPECTS = ("return value", "extra hits", "missed hits", "hit cap", "hit blocks", "no false hit", "token count",
           "hash chaining", "null block", "live requests", "table length", "conservation", "ref count", "new block ref count",
           "block_table", "free order", "release order", "touch order", "hashed blocks", "index", "atomic failure",
           "refused (ValueError)")


def located(difference: Difference) -> str:
    aspect, location = difference.aspect, difference.location
    if not location or location.startswith(aspect) or f"{aspect}[" in location:
        return plain(difference)
    return f"{aspect}: {plain(difference)}"


def false_hit(difference: Difference) -> str:
    """A block handed out for a prefix its KV was not computed for: the block (in the location), the prefix
    its KV holds (`got`; None: no request's calls computed it) and the prefix asked for (`expected`)."""
    holds = "no KV any request computed" if difference.got is None else \
        f"the KV computed for the prefix {list(difference.got)}"
    return f"no false hit: {difference.location} holds {holds}, not the KV of the prefix asked for, " \
           f"{list(difference.expected)}"


def stale_length(difference: Difference) -> str:
    """The pool's length of a request (`got`) is not the number of tokens the request holds (`expected`,
    which the note names in the pool's terms)."""
    return f"token count: {difference.location} is {difference.got}, but {difference.note} " \
           f"{difference.expected} tokens (a stale length: the pool decides the request's blocks by it)"


word({**dict.fromkeys(ASPECTS, located), "no false hit": false_hit, "token count": stale_length})
