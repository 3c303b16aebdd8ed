"""Use cases shared by the Lambda handlers and the CLI."""
