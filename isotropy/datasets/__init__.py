"""Loaders for the data sets the experiments use, in the layouts their users have on disk."""
