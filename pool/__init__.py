"""pool package."""
