"""Running a model on the local machine and measuring where its time goes.

``inputs`` makes or reads the feeds, ``ort`` runs ONNX Runtime (CPU or CUDA), ``trt`` builds and runs
TensorRT / TensorRT-RTX engines, ``device`` reads the GPU's peaks and measures copies, ``telemetry``
samples NVML, ``roofline`` and ``verdict`` turn times into an answer, and ``profile`` is the job that ties
them together (:mod:`splitscope.engine.child` runs it, and calibration, in a process of their own).
"""
