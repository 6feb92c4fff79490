"""What TensorRT did: trtexec's layer info, profiles and per-iteration times (TensorRT 8 to 11), mapped
onto the ONNX graph.

``readers`` detects and reads each file from its content, ``precision`` reads a layer's real precision
from its tensor formats, ``mapping`` ties engine layers to ONNX nodes, ``lint`` finds what costs time,
``compare`` puts two engines side by side, ``engine_graph`` draws an engine without its ONNX model, and
``importer`` ties a set of files of one engine together.
"""
