"""Calibration the TensorRT 11 way: statistics of the activations in one pass, ranges by method, and a
model with Q/DQ (INT8, FP8) or casts written so that TensorRT's strongly typed builder takes it.

``data`` reads calibration samples, ``stats`` keeps each tensor's running range and a histogram that is
re-binned as the range grows, ``methods`` turns statistics into ranges (max, percentile, entropy, MSE),
``collect`` runs the FP32 model over the data, ``qdq`` writes the quantized model, ``accuracy`` compares it
with the original, ``calibrate`` is the job that ties them together.
"""
