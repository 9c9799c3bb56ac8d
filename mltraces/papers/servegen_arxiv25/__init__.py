"""ServeGen (arXiv 2505.09999): per-client request rates of Alibaba Bailian's model services."""
