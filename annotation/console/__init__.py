"""The admin's batch pages in the product: batches, the upload wizard, preview, launch and
review (mounted at /batches/, namespace ``console``)."""
