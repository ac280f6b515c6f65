"""pagedcheck: model-based stateful testing for paged KV-cache memory managers."""
