"""Zeus (NSDI'23): its figures, evaluation sweeps, published numbers and notebook cells."""
