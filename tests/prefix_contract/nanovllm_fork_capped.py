"""nano-vllm-fork held to the hit cap: a prompt whose every block is cached leaves nothing to compute, and its
model runner then prefills zero tokens for it (model_runner.prepare_prefill: seq[seq.num_cached_tokens:])."""

from nanovllm_fork_adapter import NanoVllmForkAdapter


class CappedNanoVllmFork(NanoVllmForkAdapter):
    policy = {**NanoVllmForkAdapter.policy, "hit_cap": True}
