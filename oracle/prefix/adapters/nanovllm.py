class NanovllmAdapter: shape='nanovllm'
