"""The inference servers' integrations: vLLM's and SGLang's `--load-format ringload` (vllm,
sglang), what they share that belongs to no server (weights: options, model folder, weight
stream), vLLM's pre-sharded layout and `vllm_convert`. The entry points and users name them by
their public paths, `ringload.vllm_loader`, `ringload.sglang_loader`, `ringload.vllm_convert`.
Stands on `ringload.params`, `ringload.dropin` and `ringload.ground`.
"""
