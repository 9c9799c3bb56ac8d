"""Mooncake (FAST'25): its trace release's workload statistics and prefix-cache hit rates."""
