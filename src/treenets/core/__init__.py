"""The small helpers every layer above uses and that know nothing of models or tasks: errors and messages
(`errors`, `console`), files and folders (`files`, `folders`, `limits`), the config sections' building blocks
(`schema`), devices and threads (`devices`), vocabularies (`vocab`), checkpoints (`checkpoint`), a run's metrics
log (`runlog`), the optimisers (`optim`) and the version (`version`)."""
