"""Loads straight into a model's parameters: where each checkpoint tensor lands (plan), parameters
mapped from the file's own pages (mapping), read-once over a tensor-parallel group (group), and
the load itself (load). The server integrations call `load.load_into_parameters`.
Stands on `ringload.dropin` and `ringload.ground`.
"""
