"""Write operations of the engine: one function per operation, called by every entry point."""
