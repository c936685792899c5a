def search(query, top_k=5, alpha=0.05):
    return query
