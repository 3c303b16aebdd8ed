"""I/O adapters. Each takes its boto3 client as an argument, so tests pass clients of a local endpoint."""
