"""Reading ONNX: the wire reader, the loader and its checks, the graph model builder, shape inference."""
