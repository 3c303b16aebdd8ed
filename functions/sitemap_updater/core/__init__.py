"""Pure core: event models, URL rules, sharding, rendering. No boto3, no environment, no I/O."""
