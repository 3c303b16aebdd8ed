"""Local runs without Docker or an AWS account: moto in server mode, resources from template.yaml."""
