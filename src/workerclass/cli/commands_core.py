"""check, admit, resolve."""
