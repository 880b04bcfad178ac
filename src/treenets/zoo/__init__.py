"""The model zoo: trained models shipped as folders, found by name, by path or by download. `registry.py` the shipped
models and where they are (`zoo.json`, the checkout, the cache, downloads), `model_folder.py` a model folder read and
written."""
