"""The disagreement review pages: disputed items, one item with its votes, rulings, more votes."""
