"""The extraction core: from captured turns and documents to memories with provenance."""
