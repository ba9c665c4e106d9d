"""reasoning layer."""
