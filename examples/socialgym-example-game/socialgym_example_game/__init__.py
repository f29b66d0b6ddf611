"""An example of a Social Gym game shipped in its own package (see ``lowest_unique_bid``)."""
