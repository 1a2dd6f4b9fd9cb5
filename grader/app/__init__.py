"""The entry points: the CLI, batches, the Gradescope runner, bundles, the demo."""
