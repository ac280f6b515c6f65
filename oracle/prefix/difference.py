"""The prefix family's aspects of a Difference (oracle/difference.py), worded `ASPECT: LOCATION: expected E, got
G`, the aspect left out when the location already names it (or is empty): the core's `located`."""

from oracle.difference import located, word

ASPECTS = ("return value", "extra hits", "missed hits", "hit cap", "hit blocks", "no false hit",
           "hash chaining", "null block", "live requests", "table length", "conservation", "ref count",
           "block_table", "free order", "release order", "hashed blocks", "index", "atomic failure")


word(dict.fromkeys(ASPECTS, located))
