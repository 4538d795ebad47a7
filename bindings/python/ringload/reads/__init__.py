"""Hugging Face libraries' own loads with ringload doing the reads: transformers' and diffusers'
from_pretrained. Users name them by their public paths, `ringload.transformers_reads` and
`ringload.diffusers_reads`. Stands on `ringload.dropin` and `ringload.ground`.
"""
