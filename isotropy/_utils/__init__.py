"""Private plumbing shared by every floor: argument validation, the exception, the array backend, data
magnitude, atomic writes, subsampling, progress reporting and package versions (as scikit-learn's ``utils``)."""
