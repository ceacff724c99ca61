"""Text encoders shared by both models: the transformer wrapper, LoRA adapters, precision and quantization."""
