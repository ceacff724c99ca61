"""data_tools: document model, corpus formats, knowledge bases and dataset definitions."""
