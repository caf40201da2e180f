"""Diagnose: what is wrong with a cuDNN setup, what the user will see, and how to fix it.

Runs the stages before it and arranges what they return: `doctor` (every check, one report),
`consumers` (what PyTorch, JAX, ONNX Runtime and TensorFlow need), `trace` (first-call latency
stage by stage) and `apilog` (cuDNN's API log read back). The CLI formats what it hands on.
"""
