"""Random and directed programs, campaigns that scale, functional coverage."""
