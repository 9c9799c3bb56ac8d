"""ElasticFlow (ASPLOS'23): its replay setups, figures, published numbers and notebook cells."""
