"""Readers for the files embeddings and word vectors come in."""
