"""Implementations pagedcheck owns: the Python engine (`engine.llm_memory`) and the C reference (`engine/c`)."""
