"""The reference answer, loaded. Caught by ``test_prediction_matches_the_ledger``."""

import importlib.util
from pathlib import Path

import crashcourse


def predict(boundary: str) -> dict:
    reference = (Path(crashcourse.__file__).resolve().parents[2]
                 / "solutions" / "ch04" / "predict.py")
    spec = importlib.util.spec_from_file_location("reference", reference)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded.predict(boundary)
