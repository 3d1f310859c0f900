"""A sweep's search (its Optuna study, in the catalog's database) and its driver, which starts its
trials as runs of its task and prunes them."""
