"""The work of the commands, one module each, named as its command: `train` (with `training/`, the loop, the run
folder and the checks of what a run starts from), `eval`, `export`, `parse`, `parse_eval`, `baselines`,
`ensemble`, `distill`, `syneval`, `check_golden`, `serve`; and `convert`, the official weights of any model
(`treenets.workflows.convert.from_official`)."""
