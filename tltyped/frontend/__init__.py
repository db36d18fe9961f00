"""Signature and in-body annotation analysis, call binding, and elaboration to TIR."""
