"""Write operations of the agreement app: metric batches and reports (one function per write)."""
