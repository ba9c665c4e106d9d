"""kb layer."""
