"""AcmeTrace (NSDI'24): its figures, summary checks, published numbers and notebook cells."""
