"""Hostile prefix-family submission (review 5), appended to free_queue_lie.py (forward_order_free's pool, its shown
free queue lying in a correct free's order): the second opinion on a free's order (oracle/prefix/queue_order.py)
drains the queue with one-token admits right after the free, where no directed program admits one. So the pool
refuses a one-token request that comes right after a free: a second opinion that said nothing then would leave
the free's order to the queue the pool shows."""

_Lying = KVCacheManager  # noqa: F821  (free_queue_lie.py's, above)


class KVCacheManager(_Lying):
    _freed = False

    def free(self, request):
        super().free(request)
        self._freed = True

    def allocate_slots(self, request, *args, **kwargs):
        freed, self._freed = self._freed, False
        if freed and len(request.all_token_ids) == 1:
            return None
        return super().allocate_slots(request, *args, **kwargs)
