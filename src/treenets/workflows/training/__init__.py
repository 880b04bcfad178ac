"""The training of every task: the loop (`trainer.py`: `Trainer`, optimizers, checkpoints, evaluation, DDP), the
run folder it writes (`run_folder.py`) and the checks of what a run starts from (`checks.py`);
`treenets.workflows.train` is the `treenets train` command's work around them."""
