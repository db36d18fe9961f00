"""Lowering through TileLang, building with nvcc, the launcher, the disk cache."""
