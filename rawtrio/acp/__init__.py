"""The Agent Client Protocol front end (`rawtrio acp`): docs/acp.md."""
