"""The drop-in APIs: tensorizer's (TensorDeserializer, TensorSerializer), safetensors.torch's
(load_file, save_file, safe_open, ...), streamed hand-over, and ringload.load_folder.

The package's top level re-exports what a user calls; these modules stand on `ringload.ground`.
"""
