"""BurstGPT (KDD'25): the ChatGPT and GPT-4 request trace's daily pattern and token lengths."""
