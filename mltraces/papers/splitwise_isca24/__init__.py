"""Splitwise (ISCA'24) and the Azure LLM inference traces 2023: token lengths and arrivals."""
