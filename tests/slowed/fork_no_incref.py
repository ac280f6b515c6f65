"""tests.broken.fork_no_incref (fork forgets ref_count), slowed down."""

from tests.broken import fork_no_incref
from tests.slowed import slowed_calls

globals().update(slowed_calls(fork_no_incref))
