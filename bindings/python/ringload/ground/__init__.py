"""The ground floor of the Python package: what every room stands on, and nothing above it.

The engine's tensors as torch/numpy (tensors), keys and passphrases (crypto), signatures
(signing), what a URI is before it is opened (opening), progress bars, what a loader is given
(file_objects), an opened file as its readers see it (file_reads), sliced reads, and read-once
over a process group (distributed). Imports only `ringload._ringload` and `ringload.errors`.
"""
