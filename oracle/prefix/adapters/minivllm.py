class MinivllmAdapter: shape='minivllm'
