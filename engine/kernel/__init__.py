"""The custom part, worked: an op (or a selection of nodes) on its own at the dims in force, its real input tensors,
a reference output, plugin skeletons the ONNX parser maps the node to, and a CUDA kernel checked and timed on the
GPU against the runtime default."""
