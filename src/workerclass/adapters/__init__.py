"""Adapters: the only places that touch files, TLS material or a Kubernetes API."""
