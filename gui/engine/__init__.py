"""What TensorRT did, in the window: engine data imported or built, the Engine panel, its colourings."""
